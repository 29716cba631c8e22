#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install whatever build and test dependencies are missing (Debian 12).
# Safe to run again: it installs nothing that is already there.
set -euo pipefail

PKGS=(build-essential cmake ninja-build pkg-config
      libxxhash-dev libcmocka-dev libpmemobj-dev
      python3 python3-matplotlib python3-pytest man-db
      clang libclang-rt-14-dev  # tests/fuzz: clang, libFuzzer + sanitizers
      memcached                 # apps/pmcached: the reference server
      libevent-dev              # apps/pmcached: the server's event loops
      libmemcached-tools        # apps/pmcached tests: memccapable
      python3-pymemcache        # apps/pmcached tests: pymemcache's own tests
      nutcracker                # apps/pmcached tests: twemproxy in front
      libsqlite3-dev            # apps/sqlite: the VFS is built against it
      sqlite3                   # apps/sqlite tests: the shell loads the VFS
      python3-apsw              # apps/sqlite tests: a second Python binding
      tcl                       # apps/sqlite: builds the SQLite amalgamation
                                # (batch atomic writes, speedtest1)
      redis-tools               # apps/pmkv tests: redis-cli, redis-benchmark
      redis-server              # apps/pmkv: the reference server (benchmark)
      python3-redis             # apps/pmkv tests: the Python client
      liblua5.1-0-dev)          # apps/pmkv: EVAL's Lua 5.1, as Redis embeds

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
		|| missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO="sudo"
	echo "setup: installing ${missing[*]}" >&2
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
