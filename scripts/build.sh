#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configure and build one tree: scripts/build.sh DIR [cmake options...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPMTX_WERROR=ON "$@" >/dev/null
ninja -C "$dir" >/dev/null
