# SPDX-License-Identifier: BSD-3-Clause
# The VFS's open of corrupt region files, fuzzed in the clang tree
# build-fuzz (tests/fuzz_open.sh, tests/fuzz_open.c): 10,000 executions
# by default, 10,000,000 with PMTX_LONG_TESTS=1. Included from
# CMakeLists.txt once SQLite is found.
if(PMTX_TESTS)
  app_fuzz_test(sqlite_fuzz_open_short
                ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz_open.sh)
endif()
app_fuzzer(psq-fuzz-open tests/fuzz_open.c pmtx_sqlite_static)
if(PMTX_FUZZ)
  # region/layout.h: the region header, for the offsets patches aim at
  target_include_directories(psq-fuzz-open PRIVATE ${CMAKE_SOURCE_DIR}/src)
endif()
