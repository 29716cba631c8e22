# Record a trace of one undo transaction through PMTX_TRACE (test_trace
# --emit), then check `pmtx trace analyze` on it: the text summary, one
# JSON line per file, --help; a truncated copy and a file that is no trace
# give a message and exit 1 (the good file is still analyzed); usage
# errors exit 2.
set(trace ${WORK}/trace_analyze_test.bin)
set(cut ${WORK}/trace_analyze_cut.bin)
set(region ${WORK}/trace_analyze_test.pmtx)
file(REMOVE ${trace} ${cut} ${region})
set(ENV{PMTX_TRACE} ${trace})
execute_process(COMMAND ${EMIT} --emit ${region} RESULT_VARIABLE rc)
unset(ENV{PMTX_TRACE})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "test_trace --emit failed: ${rc}")
endif()

function(run want_rc)
  execute_process(COMMAND ${PMTX} trace analyze ${ARGN} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL want_rc)
    message(FATAL_ERROR "pmtx trace analyze ${ARGN}: exit ${rc}, not "
                        "${want_rc}\n${out}${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

function(expect text)
  foreach(want ${ARGN})
    if(NOT text MATCHES "${want}")
      message(FATAL_ERROR "output lacks '${want}':\n${text}")
    endif()
  endforeach()
endfunction()

# One undo transaction: three epochs (log record, data, commit mark).
run(0 ${trace})
expect("${out}" "transactions +1 committed, 0 aborted"
       "epochs per tx +median 3, p95 3" "dependencies +self"
       "critical path" "window 50 us")
run(0 ${trace} ${trace} --json --window-us 7)
string(REGEX MATCHALL "\n" lines "${out}")
list(LENGTH lines n)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "--json on two files printed ${n} lines:\n${out}")
endif()
expect("${out}" "^{\"file\": \"[^\"]*trace_analyze_test.bin\", "
       "\"tx_committed\": 1, " "\"window_us\": 7, "
       "\"epochs_per_tx\": {\"n\": 1, \"mean\": 3, \"median\": 3, "
       "\"pruned_lines\": 0}\n{")
run(0 --help)
expect("${out}" "usage: pmtx trace analyze FILE" "--window-us")

# A copy without its last 20 bytes: the last record is cut.
execute_process(COMMAND sh -c "head -c $(( $(wc -c < '${trace}') - 20 )) '${trace}' > '${cut}'")
run(1 ${cut} ${trace} --json)
expect("${err}" "trace analyze: .*trace_analyze_cut.bin: .*PMTX_E_TRUNCATED")
expect("${out}" "trace_analyze_test.bin")
file(WRITE ${cut} "not a persistence trace, not at all")
run(1 ${cut})
expect("${err}" "trace_analyze_cut.bin: .*PMTX_E_BAD_MAGIC")
run(1 ${WORK}/no-such-trace.bin)
run(2)
run(2 ${trace} --window-us x)
run(2 ${trace} --no-such-option)
file(REMOVE ${trace} ${cut} ${region})
