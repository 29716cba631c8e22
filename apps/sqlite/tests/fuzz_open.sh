#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzz the pmtx VFS's open of region files: apps/sqlite/tests/fuzz_open.sh
#                                  [--runs N | --time S] [-- libFuzzer options]
#
# Builds psq-fuzz-open in the clang tree build-fuzz (-DPMTX_FUZZ=ON) and
# runs it from the patch lists in tests/fuzz_open_seeds (the reproducers
# of bugs found are kept there too, as regress-*, and so are replayed by
# every run). Each input patches the root, the chunk directory or the
# chunks of a template database (fuzz_open.c). Default: 10,000 executions
# with a fixed seed (under a minute here); PMTX_LONG_TESTS=1: 10,000,000.
# Exits nonzero on any crash, hang, sanitizer report, leak or harness
# check (fuzz_open.c O6), and prints the executions and exec/s at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../../tests/fuzz/common.sh"
fuzz_limits 10000 "$@" || exit 2
fuzz_app psq-fuzz-open fuzz-sqlite-open apps/sqlite/psq-fuzz-open \
	"$here/fuzz_open_seeds" -max_len=1025
