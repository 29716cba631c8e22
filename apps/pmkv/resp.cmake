# SPDX-License-Identifier: BSD-3-Clause
# pmkv's protocol layer (resp.h): a pure RESP2 parser and the reply
# builders, with no pmtx dependency. Included from CMakeLists.txt, in
# every tree (the fuzz tree build-fuzz is configured with PMTX_TESTS=OFF).
add_library(pmkv_resp STATIC ${CMAKE_CURRENT_LIST_DIR}/resp.c)
target_include_directories(pmkv_resp PUBLIC ${CMAKE_CURRENT_LIST_DIR})

if(PMTX_TESTS)
  find_path(CMOCKA_INCLUDE cmocka.h REQUIRED)
  find_library(CMOCKA_LIB cmocka REQUIRED)
  add_executable(test_pmkv_resp ${CMAKE_CURRENT_LIST_DIR}/tests/test_resp.c)
  target_include_directories(test_pmkv_resp PRIVATE ${CMOCKA_INCLUDE})
  target_link_libraries(test_pmkv_resp PRIVATE pmkv_resp ${CMOCKA_LIB})
  add_test(NAME pmkv_resp COMMAND test_pmkv_resp)
  set_tests_properties(pmkv_resp PROPERTIES LABELS unit TIMEOUT 300)

  # The parser fuzzed in the clang tree build-fuzz (tests/fuzz_resp.sh):
  # 10,000 executions by default, 10,000,000 with PMTX_LONG_TESTS=1.
  app_fuzz_test(pmkv_fuzz_resp_short
                ${CMAKE_CURRENT_LIST_DIR}/tests/fuzz_resp.sh)
endif()
# ... by this harness (app_fuzzer: built in that tree only)
app_fuzzer(pmkv-fuzz-resp ${CMAKE_CURRENT_LIST_DIR}/tests/fuzz_resp.c
           pmkv_resp)
