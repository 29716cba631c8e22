# Shared by the fuzzing scripts (tests/fuzz/run.sh,
# apps/pmcached/tests/fuzz_proto.sh); source it, then:
#   fuzz_build BDIR TARGET...      configure the clang tree, build targets
#   fuzz_exec LOG FUZZER ARGS...   run a libFuzzer binary (niced), report
#                                  executions and exec/s, and on failure
#                                  the log's tail; returns its status

fuzz_build() {
	local bdir=$1 root
	shift
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	command -v clang >/dev/null ||
		{ echo "fuzz: clang missing (scripts/setup.sh)" >&2; return 1; }
	cmake -S "$root" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_COMPILER=clang -DPMTX_WERROR=ON -DPMTX_FUZZ=ON \
		-DPMTX_TESTS=OFF >/dev/null
	ninja -C "$bdir" "$@" >/dev/null
}

fuzz_exec() {
	local log=$1 rc
	shift
	set +e
	nice -n 10 "$@" -print_final_stats=1 >"$log" 2>&1
	rc=$?
	set -e
	grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)" "$log" | tail -2 || true
	grep -E "^stat::(number_of_executed_units|average_exec_per_sec)" \
		"$log" || true
	if [ $rc -ne 0 ]; then
		tail -60 "$log"
		echo "fuzz: FAILED (status $rc); see $log" >&2
	fi
	return $rc
}
