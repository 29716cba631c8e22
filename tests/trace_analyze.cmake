# SPDX-License-Identifier: BSD-3-Clause
# Record a trace of one undo transaction through PMTX_TRACE (test_trace
# --emit), then check `pmtx trace analyze` on it: the text summary, one
# JSON line per file, --help; a truncated copy and a file that is no trace
# give a message and exit 1 (the good file is still analyzed); usage
# errors exit 2.
set(subcmd analyze)
include(${CMAKE_CURRENT_LIST_DIR}/trace_cmd.cmake)

# One undo transaction: three epochs (log record, data, commit mark).
run(0 ${trace})
expect("${out}" "transactions +1 committed, 0 aborted"
       "epochs per tx +median 3, p95 3" "dependencies +self"
       "critical path" "window 50 us")
run(0 ${trace} ${trace} --json --window-us 7)
expect_lines(2)
expect("${out}" "^{\"file\": \"[^\"]*trace_analyze_test.bin\", "
       "\"tx_committed\": 1, " "\"window_us\": 7, "
       "\"epochs_per_tx\": {\"n\": 1, \"mean\": 3, \"median\": 3, "
       "\"pruned_lines\": 0}\n{")
run(0 --help)
expect("${out}" "usage: pmtx trace analyze FILE" "--window-us")

expect_bad_files()
run(2 ${trace} --window-us x)
run(2 ${trace} --no-such-option)
file(REMOVE ${trace} ${cut} ${region})
