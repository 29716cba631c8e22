#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole test suite: release build (every test), then the ASan + UBSan
# build (unit tests). PMTX_LONG_TESTS=1 selects the long mode.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)

echo "== build (warnings are errors)"
scripts/build.sh build
echo "== tests"
(cd build && ctest --output-on-failure -j "$jobs")

echo "== sanitizer build (ASan + UBSan, debug asserts on): unit tests"
scripts/build.sh build-san -DPMTX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
(cd build-san && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 \
	ctest --output-on-failure -j "$jobs" -L unit)
