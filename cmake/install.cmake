# `make install`: headers, libhal.so.MAJOR, the hal tool, a CMake package and a pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS hal hal_model hal_train hal_dist hal_evidence hal_serve EXPORT halTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS hal_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/hal DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hal/models
  FILES_MATCHING PATTERN "*.onnx" PATTERN "*.npy")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hal/data
  FILES_MATCHING PATTERN "*.npy" PATTERN "*.md")
install(FILES ${PROJECT_BINARY_DIR}/include/hal/version.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hal)

set(hal_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/hal)
install(EXPORT halTargets NAMESPACE hal:: DESTINATION ${hal_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/halConfig.cmake.in
  ${PROJECT_BINARY_DIR}/halConfig.cmake INSTALL_DESTINATION ${hal_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/halConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/halConfig.cmake ${PROJECT_BINARY_DIR}/halConfigVersion.cmake
  DESTINATION ${hal_cmake_dir})

# Relocatable: the prefix is found from the .pc file's own place, so `--prefix` works.
string(REGEX MATCHALL "/" hal_libdir_slashes "${CMAKE_INSTALL_LIBDIR}")
list(LENGTH hal_libdir_slashes hal_libdir_depth)
set(hal_pc_prefix "\${pcfiledir}/..")
foreach(_ RANGE ${hal_libdir_depth})
  string(APPEND hal_pc_prefix "/..")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/hal.pc.in ${PROJECT_BINARY_DIR}/hal.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hal.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The benchmark suites, which `hal bench SUITE` runs from ../libexec/hal.
foreach(suite stream thread_pool memory dispatch copy ops pipeline mesh collectives serve)
  if(TARGET hal_bench_${suite})
    set_target_properties(hal_bench_${suite} PROPERTIES
      INSTALL_RPATH "$ORIGIN/../../${CMAKE_INSTALL_LIBDIR}")
    install(TARGETS hal_bench_${suite} RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/hal)
  endif()
endforeach()
