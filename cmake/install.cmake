# SPDX-License-Identifier: BSD-3-Clause
# What `cmake --install` puts into the prefix, and the .deb CPack makes of
# it (`cpack -G DEB` in the build directory).
#
#   include/          pmtx*.h, pmtx*.hpp (every public header)
#   lib/              libpmtx.so.X.Y.Z, libpmtx.so.X, libpmtx.so, libpmtx.a
#   lib/pkgconfig/    pmtx.pc
#   lib/cmake/pmtx/   pmtxConfig.cmake, pmtxConfigVersion.cmake, targets
#   bin/              pmtx, pmtx-bench (rules in tools/ and bench/)
#   share/man/man1,3  every docs/man/*.1 and docs/man/*.3
#
# Invariants
#  1. The installed tree is relocatable: nothing in it names the prefix
#     given at configure time. pmtx.pc is written at install time with the
#     prefix of that install (cmake --install --prefix P), and the CMake
#     package finds itself relative to its own directory.
#  2. Headers and man pages are matched by pattern when installing, so a
#     header or page added later is installed without touching this file.
#  3. Nothing built for tests only (pmtx_mut, pmtx-mut) is installed.
include(CMakePackageConfigHelpers)

set(PMTX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/pmtx)

# find_package(pmtx) names: pmtx::pmtx is the shared library.
set_target_properties(pmtx_shared PROPERTIES EXPORT_NAME pmtx)
set_target_properties(pmtx PROPERTIES EXPORT_NAME pmtx_static)
install(TARGETS pmtx_shared pmtx EXPORT pmtxTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT pmtxTargets NAMESPACE pmtx:: DESTINATION ${PMTX_CMAKE_DIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "pmtx*.h" PATTERN "pmtx*.hpp")

foreach(section 1 3)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/man/
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section}
          FILES_MATCHING PATTERN "*.${section}")
endforeach()

# pmtx.pc, with the prefix of this install (invariant 1).
set(pmtx_pc ${PROJECT_BINARY_DIR}/pmtx.pc)
install(CODE "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(PMTX_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(PMTX_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PMTX_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/pmtx.pc.in\" \"${pmtx_pc}\"
                 @ONLY)")
install(FILES ${pmtx_pc} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pmtxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pmtxConfig.cmake INSTALL_DESTINATION ${PMTX_CMAKE_DIR})
# pmtx.h: the major version must match (pmtx_version() checks it at run time).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pmtxConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pmtxConfig.cmake
        ${PROJECT_BINARY_DIR}/pmtxConfigVersion.cmake
        DESTINATION ${PMTX_CMAKE_DIR})

# cpack -G DEB: one package with the library, headers, commands and pages.
set(CPACK_PACKAGE_NAME pmtx)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "failure-atomic transactions over memory-mapped persistent regions")
set(CPACK_PACKAGE_CONTACT "pmtx maintainers <root@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# BSD-3-Clause (SPDX): the license file goes into the package and into
# share/doc/pmtx of an install.
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
include(CPack)
