# Embeds the portable kernels of kernels/ into the library: one generated source holding each
# file's text, found at run time by its path under kernels/ without the extension
# ("tensor/strided_copy"). Adding or editing a kernel re-runs the configuration, which
# regenerates it.
function(hal_embed_kernels target)
  file(GLOB_RECURSE kernel_files CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/kernels
       ${PROJECT_SOURCE_DIR}/kernels/*.kernel)
  list(SORT kernel_files)
  set(entries "")
  foreach(file IN LISTS kernel_files)
    file(READ ${PROJECT_SOURCE_DIR}/kernels/${file} text)
    string(REGEX REPLACE "\\.kernel$" "" name ${file})
    string(APPEND entries "    {\"${name}\", R\"hal_kernel(${text})hal_kernel\"},\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 ${PROJECT_SOURCE_DIR}/kernels/${file})
  endforeach()
  set(HAL_EMBEDDED_KERNELS "${entries}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/embedded_kernels.cpp.in
                 ${PROJECT_BINARY_DIR}/src/embedded_kernels.cpp @ONLY)
  target_sources(${target} PRIVATE ${PROJECT_BINARY_DIR}/src/embedded_kernels.cpp)
endfunction()
