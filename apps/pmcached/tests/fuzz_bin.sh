#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzz pmcached's binary protocol parser: apps/pmcached/tests/fuzz_bin.sh
#                                         [--runs N | --time S] [-- libFuzzer options]
#
# Builds fuzz_bin in the clang tree build-fuzz (-DPMTX_FUZZ=ON) and runs
# it from the seed requests in tests/fuzz_bin_seeds with a dictionary of
# the protocol's opcodes. Default: 300,000 executions with a fixed seed;
# PMTX_LONG_TESTS=1: 10,000,000. Exits nonzero on any crash, hang,
# sanitizer report, leak or harness check (fuzz_bin.c), and prints the
# executions and exec/s at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../../tests/fuzz/common.sh"
fuzz_limits 300000 "$@" || exit 2
fuzz_app fuzz_bin fuzz-bin apps/pmcached/fuzz_bin "$here/fuzz_bin_seeds" \
	-dict="$here/fuzz_bin.dict" -max_len=4096
