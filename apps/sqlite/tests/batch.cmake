# SPDX-License-Identifier: BSD-3-Clause
# pmtx-sqlite under a SQLite built with SQLITE_ENABLE_BATCH_ATOMIC_WRITE
# (vfs.c, B1-B4), which Debian's is not: tests/batch_atomic.sh builds it
# from Debian's sqlite3 source package (downloaded once, cached in
# ~/.cache/pmtx; without the network the test fails and says so) and runs
# test_batch.py, test_vfs.py, test_differential.py, kill9.py and
# psq-explore with it. About 100 s the first time (download, amalgamation,
# compile) on 2 cores, 30 s after.
add_test(NAME sqlite_batch_atomic
         COMMAND ${PSQ_ENV} PSQ_EXPLORE=$<TARGET_FILE:psq-explore>
                 PSQ_KILL9_WRITER=$<TARGET_FILE:psq-kill9-writer>
                 ${CMAKE_CURRENT_LIST_DIR}/batch_atomic.sh)
set_tests_properties(sqlite_batch_atomic PROPERTIES LABELS crash
                     TIMEOUT 1200)
