# Installs the library, headers, CLI and a CMake package config so that consumers can write
# find_package(fp4gemm) and link fp4gemm::fp4gemm (tests/consumer proves it).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS fp4gemm fp4gemm_cli EXPORT fp4gemmTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/fp4gemm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT fp4gemmTargets NAMESPACE fp4gemm:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fp4gemm)
configure_package_config_file(cmake/fp4gemmConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/fp4gemmConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fp4gemm)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/fp4gemmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/fp4gemmConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/fp4gemmConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fp4gemm)
