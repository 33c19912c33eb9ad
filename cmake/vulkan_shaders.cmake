# The Vulkan backend's kernels: kernels/vulkan/*.comp (GLSL compute shaders) compiled to SPIR-V
# by glslc at build time, then embedded into the library as one generated source, found at run
# time by file name without the extension ("binary"): vulkan_shader() in
# src/backends/vulkan/vulkan_shaders.hpp. A shader written once for several element types
# lists its variants, one line each, as
#   // hal-variant NAME -DMACRO=VALUE ...
# and is compiled once per variant under NAME instead of its file's name.
function(hal_vulkan_shaders target)
  file(GLOB shader_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/vulkan/*.comp)
  list(SORT shader_files)
  file(GLOB shader_includes CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/vulkan/*.glsl)
  set(spirv_dir ${PROJECT_BINARY_DIR}/spirv)
  set(spirv_files "")
  foreach(file IN LISTS shader_files)
    get_filename_component(name ${file} NAME_WE)
    # The variant lines are read when CMake configures: a changed file configures again.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
    file(STRINGS ${file} variant_lines REGEX "^// hal-variant ")
    if(NOT variant_lines)
      set(variant_lines "// hal-variant ${name}")
    endif()
    foreach(line IN LISTS variant_lines)
      string(REGEX REPLACE "^// hal-variant +" "" line "${line}")
      separate_arguments(words UNIX_COMMAND "${line}")
      list(POP_FRONT words variant)
      set(spirv ${spirv_dir}/${variant}.spv)
      add_custom_command(
        OUTPUT ${spirv}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${spirv_dir}
        COMMAND ${HAL_GLSLC} --target-env=vulkan1.2 -O -Werror ${words} -o ${spirv} ${file}
        DEPENDS ${file} ${shader_includes}
        COMMENT "glslc ${variant}"
        VERBATIM)
      list(APPEND spirv_files ${spirv})
    endforeach()
  endforeach()
  set(generated ${PROJECT_BINARY_DIR}/src/vulkan_shaders.cpp)
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${generated} "-DINPUTS=${spirv_files}"
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPENDS ${spirv_files} ${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake
    COMMENT "embedding the Vulkan shaders"
    VERBATIM)
  target_sources(${target} PRIVATE ${generated})
endfunction()
