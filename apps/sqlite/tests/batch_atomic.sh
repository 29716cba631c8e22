#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# pmtx-sqlite under a SQLite built with SQLITE_ENABLE_BATCH_ATOMIC_WRITE,
# the path of vfs.c's B1-B4 that Debian's SQLite never takes.
#
#   apps/sqlite/tests/batch_atomic.sh [BUILD_DIR]
#
# 1. tests/test_batch.py with the system SQLite: no commit is a batch.
# 2. tools/sqlite_src.sh: the amalgamation of Debian's sqlite3 source
#    package, the version of the installed libsqlite3-0 (downloaded once).
# 3. A shared libsqlite3.so.0 from it, with Debian's compile options
#    (debian/rules and its configure, and patch 31's page size) plus
#    SQLITE_ENABLE_BATCH_ATOMIC_WRITE, cached in
#    ${PMTX_CACHE:-~/.cache/pmtx}/sqlite-batch/ and built only if missing.
# 4. With that directory first in LD_LIBRARY_PATH, so that python3's
#    sqlite3 module, apsw, the sqlite3 shell, psq-kill9-writer and
#    psq-explore all load it (test_batch.py checks each one):
#    test_batch.py, test_vfs.py, test_differential.py; kill9.py, 200
#    kills under redo and undo and 50 with cache spills; psq-explore
#    on pdom1, 20 transactions.
#
# The programs are $PSQ_EXT, $PMTX_CMD, $PSQ_EXPLORE and $PSQ_KILL9_WRITER
# (the ctest sqlite_batch_atomic sets them), or else those of BUILD_DIR
# (default: build/ of this checkout). Fails, and says why, when the source
# package cannot be had (no network, no tclsh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
app=$(dirname "$here")
build=${1:-$(cd "$app/../.." && pwd)/build}
export PSQ_EXT=${PSQ_EXT:-$build/apps/sqlite/libpmtx_sqlite.so}
export PMTX_CMD=${PMTX_CMD:-$build/tools/pmtx}
export PSQ_EXPLORE=${PSQ_EXPLORE:-$build/apps/sqlite/psq-explore}
export PSQ_KILL9_WRITER=${PSQ_KILL9_WRITER:-$build/apps/sqlite/psq-kill9-writer}
export PYTHONDONTWRITEBYTECODE=1
unset PSQ_BATCH_LIB
for f in "$PSQ_EXT" "$PMTX_CMD" "$PSQ_EXPLORE" "$PSQ_KILL9_WRITER"; do
	[ -e "$f" ] || { echo "batch_atomic: $f is missing (build first)" >&2
	                 exit 1; }
done
pytest=(/usr/bin/python3 -m pytest -q -p no:cacheprovider)
t0=$SECONDS
step() { echo "== batch_atomic [$((SECONDS - t0)) s]: $*"; }

step "test_batch.py with the system SQLite"
"${pytest[@]}" "$here/test_batch.py"

step "the source of the system's SQLite (tools/sqlite_src.sh)"
if ! tree=$("$app/tools/sqlite_src.sh"); then
	echo "batch_atomic: FAILED: cannot build SQLite's amalgamation from" \
	     "Debian's sqlite3 source package (tools/sqlite_src.sh above:" \
	     "no network to deb.debian.org, or no tclsh?)" >&2
	exit 1
fi

# Debian's libsqlite3-0: debian/rules' CFLAGS, what its configure adds
# (FTS4, FTS5, math functions, TEMP_STORE=1, the HAVE_* of glibc but
# malloc_usable_size, which a Debian patch turns off) and patch 31
# (MAX_DEFAULT_PAGE_SIZE). test_batch.py compares the result's
# compile_options with the system's.
cflags=(-O2 -fno-strict-aliasing -fPIC -DNDEBUG
	-DSQLITE_SECURE_DELETE -DSQLITE_ENABLE_COLUMN_METADATA
	-DSQLITE_ENABLE_FTS3 -DSQLITE_ENABLE_FTS3_PARENTHESIS
	-DSQLITE_ENABLE_FTS4 -DSQLITE_ENABLE_FTS5
	-DSQLITE_ENABLE_RTREE=1 -DSQLITE_SOUNDEX=1
	-DSQLITE_ENABLE_UNLOCK_NOTIFY -DSQLITE_OMIT_LOOKASIDE=1
	-DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_ALLOW_ROWID_IN_VIEW
	-DSQLITE_ENABLE_UPDATE_DELETE_LIMIT=1 -DSQLITE_ENABLE_LOAD_EXTENSION
	-DSQLITE_ENABLE_JSON1 -DSQLITE_LIKE_DOESNT_MATCH_BLOBS
	-DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_FTS3_TOKENIZER=1
	-DSQLITE_USE_URI=1 -DSQLITE_MAX_SCHEMA_RETRY=25
	-DSQLITE_ENABLE_PREUPDATE_HOOK -DSQLITE_ENABLE_SESSION
	-DSQLITE_ENABLE_STMTVTAB -DSQLITE_MAX_VARIABLE_NUMBER=250000
	-DSQLITE_ENABLE_MATH_FUNCTIONS -DSQLITE_TEMP_STORE=1
	-DSQLITE_MAX_DEFAULT_PAGE_SIZE=32768
	-DHAVE_FDATASYNC=1 -DHAVE_GMTIME_R=1 -DHAVE_ISNAN=1
	-DHAVE_LOCALTIME_R=1 -DHAVE_PREAD=1 -DHAVE_PREAD64=1 -DHAVE_PWRITE=1
	-DHAVE_PWRITE64=1 -DHAVE_STRCHRNUL=1 -DHAVE_USLEEP=1 -DHAVE_UTIME=1
	-DHAVE_STDINT_H=1 -DHAVE_INTTYPES_H=1
	-DSQLITE_ENABLE_BATCH_ATOMIC_WRITE)
ver=$(basename "$(dirname "$tree")")
key=$(printf '%s\n' "$tree" "${cflags[@]}" "$(gcc -dumpfullversion)" |
      sha1sum | cut -c1-12)
lib=${PMTX_CACHE:-$HOME/.cache/pmtx}/sqlite-batch/$ver-$key
if [ ! -f "$lib/libsqlite3.so.0" ]; then
	mkdir -p "$lib"
	exec 9>"$lib/.lock"
	flock 9 # ctest -j: one build, the others wait for it
	if [ ! -f "$lib/libsqlite3.so.0" ]; then
		step "building $lib/libsqlite3.so.0"
		gcc "${cflags[@]}" -shared -Wl,-soname,libsqlite3.so.0 \
			-o "$lib/libsqlite3.so.0.tmp" "$tree/bld/sqlite3.c" \
			-lm -ldl -lpthread
		mv "$lib/libsqlite3.so.0.tmp" "$lib/libsqlite3.so.0"
	fi
	exec 9>&-
fi
export PSQ_BATCH_LIB=$lib
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

step "test_batch.py with the batch SQLite ($lib)"
"${pytest[@]}" -rs "$here/test_batch.py"

step "test_vfs.py and test_differential.py with the batch SQLite"
"${pytest[@]}" "$here/test_vfs.py" "$here/test_differential.py"

step "kill -9 with the batch SQLite"
kill9=(/usr/bin/python3 "$here/kill9.py" --writer "$PSQ_KILL9_WRITER")
"${kill9[@]}" --kills 200 --runtimes redo,undo
"${kill9[@]}" --kills 50 --spill --runtimes redo

step "crash-state explorer with the batch SQLite"
"$PSQ_EXPLORE" --domain pdom1 --ntx 20 --images 32 --no-progress --quiet

step "passed"
