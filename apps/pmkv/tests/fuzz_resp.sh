#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzz pmkv's RESP2 parser: apps/pmkv/tests/fuzz_resp.sh
#                           [--runs N | --time S] [-- libFuzzer options]
#
# Builds pmkv-fuzz-resp in the clang tree build-fuzz (-DPMTX_FUZZ=ON) and
# runs it from the seed requests in tests/fuzz_seeds with the RESP
# dictionary. Default: 10,000 executions with a fixed seed (seconds);
# PMTX_LONG_TESTS=1: 10,000,000. Exits nonzero on any crash, hang,
# sanitizer report, leak or harness check (fuzz_resp.c F1-F7), and prints
# the executions and exec/s at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../../tests/fuzz/common.sh"
fuzz_limits 10000 "$@" || exit 2
fuzz_app pmkv-fuzz-resp fuzz-pmkv-resp apps/pmkv/pmkv-fuzz-resp \
	"$here/fuzz_seeds" -dict="$here/fuzz_resp.dict" -max_len=4096
