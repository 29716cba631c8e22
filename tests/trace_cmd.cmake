# SPDX-License-Identifier: BSD-3-Clause
# What the scripts that test a `pmtx trace` subcommand on a recorded trace
# share (trace_analyze.cmake, trace_hops.cmake). Set subcmd (the
# subcommand: analyze, hops) before including it. It then
#  - sets trace, cut and region to files of WORK named after the
#    subcommand (trace_${subcmd}_test.bin, _cut.bin, _test.pmtx);
#  - records into trace one undo transaction through PMTX_TRACE
#    (test_trace --emit, the program EMIT);
#  - defines run(want_rc ARGS...): pmtx trace ${subcmd} ARGS, failing
#    unless it exits want_rc, and out, err set to what it printed;
#    expect(text REGEX...): fails unless text matches every REGEX;
#    expect_lines(n): out has n lines; expect_bad_files(): the checks
#    every subcommand passes on files it cannot read.
set(trace ${WORK}/trace_${subcmd}_test.bin)
set(cut ${WORK}/trace_${subcmd}_cut.bin)
set(region ${WORK}/trace_${subcmd}_test.pmtx)
file(REMOVE ${trace} ${cut} ${region})
set(ENV{PMTX_TRACE} ${trace})
execute_process(COMMAND ${EMIT} --emit ${region} RESULT_VARIABLE rc)
unset(ENV{PMTX_TRACE})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "test_trace --emit failed: ${rc}")
endif()

function(run want_rc)
  execute_process(COMMAND ${PMTX} trace ${subcmd} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL want_rc)
    message(FATAL_ERROR "pmtx trace ${subcmd} ${ARGN}: exit ${rc}, not "
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

# The last run printed n lines (--json: one a file).
function(expect_lines n)
  string(REGEX MATCHALL "\n" lines "${out}")
  list(LENGTH lines got)
  if(NOT got EQUAL n)
    message(FATAL_ERROR "printed ${got} lines, not ${n}:\n${out}")
  endif()
endfunction()

# A truncated copy (the last record cut) and a file that is no trace give
# a message and exit 1, the good file next to them still done; a missing
# file exits 1, no file at all is a usage error.
function(expect_bad_files)
  execute_process(COMMAND sh -c "head -c $(( $(wc -c < '${trace}') - 20 )) '${trace}' > '${cut}'")
  run(1 ${cut} ${trace} --json)
  expect("${err}" "trace ${subcmd}: .*trace_${subcmd}_cut.bin: .*PMTX_E_TRUNCATED")
  expect("${out}" "trace_${subcmd}_test.bin")
  file(WRITE ${cut} "not a persistence trace, not at all")
  run(1 ${cut})
  expect("${err}" "trace_${subcmd}_cut.bin: .*PMTX_E_BAD_MAGIC")
  run(1 ${WORK}/no-such-trace.bin)
  run(2)
endfunction()
