# SPDX-License-Identifier: BSD-3-Clause
# Record a trace of one transaction through PMTX_TRACE (test_trace --emit),
# then check that `pmtx trace dump` prints it, and that the command's usage
# errors exit 2.
set(trace ${WORK}/trace_dump_test.bin)
set(region ${WORK}/trace_dump_test.pmtx)
file(REMOVE ${trace} ${region})
set(ENV{PMTX_TRACE} ${trace})
set(ENV{PMTX_TRACE_BYTES} 1)
execute_process(COMMAND ${EMIT} --emit ${region} RESULT_VARIABLE rc)
unset(ENV{PMTX_TRACE})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "test_trace --emit failed: ${rc}")
endif()
execute_process(COMMAND ${PMTX} trace dump ${trace} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pmtx trace dump failed (${rc}): ${err}")
endif()
foreach(want " REGION " " BEGIN " " STORE .* kind=log" " STORE .* kind=data"
             " BARRIER .* kind=order" " BARRIER .* kind=durable" " FLUSH "
             " COMMIT .*runtime=undo status=0" "bytes=63000000")
  if(NOT out MATCHES "${want}")
    message(FATAL_ERROR "dump lacks '${want}':\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${PMTX} no-such-command RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "unknown subcommand exited ${rc}, not 2")
endif()
execute_process(COMMAND ${PMTX} --help RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "trace dump")
  message(FATAL_ERROR "pmtx --help: ${rc} ${out}")
endif()
file(REMOVE ${trace} ${region})
