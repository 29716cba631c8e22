# SPDX-License-Identifier: BSD-3-Clause
# psq-speedtest1: SQLite's speedtest1 with the pmtx VFS registered.
# PSQ_SQLITE_SRC names the SQLite source tree that
# apps/sqlite/tools/sqlite_src.sh unpacks (scripts/eval.sh passes it);
# without it the target is not built.
set(PSQ_SQLITE_SRC "" CACHE PATH
    "SQLite source tree (apps/sqlite/tools/sqlite_src.sh) for speedtest1")
if(PSQ_SQLITE_SRC AND EXISTS ${PSQ_SQLITE_SRC}/test/speedtest1.c)
  add_executable(psq-speedtest1 ${PSQ_SQLITE_SRC}/test/speedtest1.c
                 ${CMAKE_CURRENT_LIST_DIR}/speedtest1_main.c)
  # speedtest1.c is SQLite's, compiled as it is: its warnings are not ours.
  set_source_files_properties(${PSQ_SQLITE_SRC}/test/speedtest1.c
      PROPERTIES COMPILE_OPTIONS "-w;-Wno-error"
                 COMPILE_DEFINITIONS "main=speedtest1_main")
  target_link_libraries(psq-speedtest1 PRIVATE pmtx_sqlite_static)
endif()
