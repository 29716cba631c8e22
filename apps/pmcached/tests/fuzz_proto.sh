#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzz pmcached's protocol parser: apps/pmcached/tests/fuzz_proto.sh
#                                  [--runs N | --time S] [-- libFuzzer options]
#
# Builds fuzz_proto in the clang tree build-fuzz (-DPMTX_FUZZ=ON) and runs
# it from the seed requests in tests/fuzz_seeds with memcached's
# dictionary. Default: 300,000 executions with a fixed seed (seconds);
# PMTX_LONG_TESTS=1: 10,000,000. Exits nonzero on any crash, hang,
# sanitizer report, leak or harness check (fuzz_proto.c), and prints the
# executions and exec/s at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../../tests/fuzz/common.sh"
fuzz_limits 300000 "$@" || exit 2
fuzz_app fuzz_proto fuzz-proto apps/pmcached/fuzz_proto "$here/fuzz_seeds" \
	-dict="$here/fuzz_proto.dict" -max_len=4096
