# The VFS's open of corrupt region files, fuzzed in the clang tree
# build-fuzz (tests/fuzz_open.sh, tests/fuzz_open.c): 10,000 executions
# by default, 10,000,000 with PMTX_LONG_TESTS=1. Included from
# CMakeLists.txt once SQLite is found.
if(PMTX_TESTS)
  add_test(NAME sqlite_fuzz_open_short
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz_open.sh)
  set_tests_properties(sqlite_fuzz_open_short PROPERTIES LABELS fuzz
                       TIMEOUT 7200 RESOURCE_LOCK build-fuzz)
endif()

# libFuzzer harness: only in a tree configured with -DPMTX_FUZZ=ON and
# clang, where the whole tree (libpmtx and this VFS) is instrumented.
if(PMTX_FUZZ)
  add_executable(psq-fuzz-open tests/fuzz_open.c)
  # region/layout.h: the region header, for the offsets patches aim at
  target_include_directories(psq-fuzz-open PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(psq-fuzz-open PRIVATE -fsanitize=fuzzer)
  target_link_options(psq-fuzz-open PRIVATE -fsanitize=fuzzer)
  target_link_libraries(psq-fuzz-open PRIVATE pmtx_sqlite_static)
endif()
