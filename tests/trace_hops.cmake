# SPDX-License-Identifier: BSD-3-Clause
# Record a trace of one undo transaction through PMTX_TRACE (test_trace
# --emit), then check `pmtx trace hops` on it: the text summary with its
# six machines, one JSON line per file with the shared keys, --help,
# --costs FILE (read, and overridden by an option); a truncated copy, a
# file that is no trace and a costs file without its values exit 1 (the
# good file is still modelled); usage errors exit 2.
set(subcmd hops)
include(${CMAKE_CURRENT_LIST_DIR}/trace_cmd.cmake)
set(costs ${WORK}/trace_hops_costs.jsonl)
file(REMOVE ${costs})

run(0 ${trace})
expect("${out}" "trace +[^\n]*trace_hops_test.bin" "x86_nvm +[0-9]+  1.0000"
       "x86_pwq" "hops_nvm" "hops_pwq" "ideal" "x86_here"
       "hops nvm +dfence stalls" "2 GHz, PM 160 cycles \\(80 ns\\)")
run(0 ${trace} ${trace} --json --pb-entries 8 --ghz 1)
expect_lines(2)
expect("${out}" "^{\"file\": \"[^\"]*trace_hops_test.bin\", \"records\": "
       "\"threads\": 1, \"traced_ns\": "
       "\"barriers\": {\"order\": [0-9]+, \"durable\": [0-9]+, \"unknown\": 0}"
       "\"stores\": [1-9]" "\"pm_lines_stored\": [1-9]"
       "\"time_ns\": {\"x86_nvm\": [0-9]+, \"x86_pwq\": [0-9]+, \"hops_nvm\": [0-9]+, \"hops_pwq\": [0-9]+, \"ideal\": [0-9]+, \"x86_here\": [0-9]+}"
       "\"normalized\": {\"x86_nvm\": 1, \"x86_pwq\": "
       "\"hops\": {\"nvm\": {\"dfence_stall_ns\": [0-9]+, \"full_stall_ns\": [0-9]+, \"epochs_drained\": [0-9]+, \"splits\": [0-9]+}, \"pwq\": {"
       "\"params\": {\"ghz\": 1, \"pm_cycles\": 160, \"pwq_cycles\": 40, \"pb_entries\": 8, \"pb_launch\": 16, "
       "\"pm_ns\": 160, \"pwq_ns\": 40}}\n{")
run(0 --help)
expect("${out}" "usage: pmtx trace hops FILE" "--pb-launch" "--costs FILE"
       "--here-clwb-ns")

# A costs file as pmtx-bench costs writes it; --trace-ns overrides it.
file(WRITE ${costs}
  "{\"workload\": \"costs\", \"what\": \"sfence\", \"ns\": 9.5, \"rounds\": 5, \"n\": 1000}\n"
  "{\"workload\": \"costs\", \"what\": \"clwb_clean\", \"ns\": 3.25, \"rounds\": 5, \"n\": 1000}\n"
  "{\"workload\": \"costs\", \"what\": \"barrier_lines\", \"lines\": 4, \"ns\": 200, \"rounds\": 5, \"n\": 1000}\n"
  "{\"workload\": \"costs\", \"what\": \"barrier_fit\", \"fence_ns\": 40.5, \"line_ns\": 12, \"rounds\": 5, \"n\": 1000}\n"
  "{\"workload\": \"costs\", \"what\": \"trace_store_record\", \"ns\": 99, \"rounds\": 5, \"n\": 1000}\n"
  "{\"workload\": \"costs\", \"what\": \"trace_record\", \"ns\": 21, \"rounds\": 5, \"n\": 1000}\n")
run(0 ${trace} --json --costs ${costs})
expect("${out}" "\"trace_ns\": 21, \"here_fence_ns\": 40.5, "
       "\"here_line_ns\": 12, \"here_clwb_ns\": 3.25, ")
run(0 --trace-ns 7 ${trace} --json --costs ${costs})
expect("${out}" "\"trace_ns\": 7, \"here_fence_ns\": 40.5, ")
file(WRITE ${costs} "{\"workload\": \"costs\", \"what\": \"sfence\", \"ns\": 9.5}\n")
run(1 ${trace} --costs ${costs})
expect("${err}" "trace_hops_costs.jsonl: no barrier_fit fence_ns")
run(1 ${trace} --costs ${WORK}/no-such-costs.jsonl)
# A measured cost below zero (noise) is refused, and said so.
file(WRITE ${costs}
  "{\"what\": \"barrier_fit\", \"fence_ns\": 1, \"line_ns\": 2}\n"
  "{\"what\": \"clwb_clean\", \"ns\": 1}\n"
  "{\"what\": \"trace_record\", \"ns\": -12.5}\n")
run(1 ${trace} --costs ${costs})
expect("${err}" "trace_hops_costs.jsonl: a negative trace_record ns")

expect_bad_files()
run(2 ${trace} --ghz x)
run(2 ${trace} --ghz 0)
run(2 ${trace} --pb-entries 0)
run(2 ${trace} --pb-launch 1.5)
run(2 ${trace} --here-fence-ns -3)
run(2 ${trace} --no-such-option)
file(REMOVE ${trace} ${cut} ${costs} ${region})
