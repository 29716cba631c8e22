# SPDX-License-Identifier: BSD-3-Clause
# Shared by the fuzzing scripts (tests/fuzz/run.sh, tests/fuzz/containers.sh,
# apps/pmcached/tests/fuzz_proto.sh, apps/pmkv/tests/fuzz_resp.sh,
# apps/sqlite/tests/fuzz_open.sh);
# source it, then:
#   fuzz_limits SHORT ARGS...      parse [--runs N | --time S] [-- libFuzzer
#                                  options]: sets limit (SHORT executions
#                                  with a fixed seed, or 10,000,000 when
#                                  PMTX_LONG_TESTS=1) and extra (the
#                                  options after --); status 2 on a bad one
#   fuzz_build BDIR TARGET...      configure the clang tree, build targets
#   fuzz_exec LOG FUZZER ARGS...   run a libFuzzer binary (niced), report
#                                  executions and exec/s, and on failure
#                                  the log's tail; returns its status
#   fuzz_app TARGET WORK FUZZER SEEDS OPTIONS...
#                                  build TARGET in the clang tree
#                                  ($PMTX_FUZZ_BUILD, else build-fuzz) and
#                                  run FUZZER (its path in the tree) with
#                                  fuzz_limits' limits, -timeout=10
#                                  -rss_limit_mb=2048 and OPTIONS, from a
#                                  fresh corpus in the tree's WORK folder
#                                  and from SEEDS; on failure, says where
#                                  the input is; returns its status

fuzz_limits() {
	limit=(-runs="$1" -seed=1)
	shift
	[ "${PMTX_LONG_TESTS:-0}" = 1 ] && limit=(-runs=10000000)
	extra=()
	while [ $# -gt 0 ]; do
		case $1 in
		--runs) limit=(-runs="$2"); shift 2 ;;
		--time) limit=(-max_total_time="$2"); shift 2 ;;
		--) shift; extra=("$@"); return 0 ;;
		*) echo "usage: $0 [--runs N | --time S] [-- opts]" >&2
		   return 2 ;;
		esac
	done
}

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

fuzz_app() {
	local target=$1 fuzzer=$3 seeds=$4 root bdir work rc=0
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	bdir=${PMTX_FUZZ_BUILD:-$root/build-fuzz}
	work=$bdir/$2
	shift 4
	fuzz_build "$bdir" "$target"
	rm -rf "$work/corpus"
	mkdir -p "$work/corpus" "$work/artifacts"
	fuzz_exec "$work/fuzz.log" "$bdir/$fuzzer" -timeout=10 \
		-rss_limit_mb=2048 "$@" -artifact_prefix="$work/artifacts/" \
		"${limit[@]}" "${extra[@]}" "$work/corpus" "$seeds" || rc=$?
	[ $rc -eq 0 ] || echo "fuzz: the input is in $work/artifacts" >&2
	return $rc
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
