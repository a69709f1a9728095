# tiledsl_add_aot_kernels(<name> GENERATOR <executable target> TARGETS <t>...
#                         [NAMESPACE <ns>])
#
# Runs the generator (a program calling tl::aot::main, tiledsl/aot.h) at
# build time to compile its kernels for the targets (sm_80, sm_90a,
# gfx942, ...), and makes <name>: a static library of the generated source
# whose header <name>.h declares the kernels' accessors, linked with
# tiledsl::runtime (no compiler, no LLVM). The binaries are also written,
# one file each, under <build dir>/<name>_binaries/ for disassembly.
function(tiledsl_add_aot_kernels name)
  cmake_parse_arguments(ARG "" "GENERATOR;NAMESPACE" "TARGETS" ${ARGN})
  if(NOT ARG_GENERATOR OR NOT ARG_TARGETS)
    message(FATAL_ERROR "tiledsl_add_aot_kernels(${name}): GENERATOR and TARGETS are required")
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${name})
  list(JOIN ARG_TARGETS "," targets)
  set(ns "")
  if(ARG_NAMESPACE)
    set(ns --namespace=${ARG_NAMESPACE})
  endif()
  add_custom_command(OUTPUT ${out}.cpp ${out}.h
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${out}_binaries
    COMMAND $<TARGET_FILE:${ARG_GENERATOR}> --targets=${targets} --output=${out}.cpp ${ns}
            --binaries=${out}_binaries
    DEPENDS ${ARG_GENERATOR}
    COMMENT "tiledsl: compiling ${name} ahead of time for ${targets}"
    VERBATIM)
  add_library(${name} STATIC ${out}.cpp ${out}.h)
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_BINARY_DIR})
  target_link_libraries(${name} PUBLIC tiledsl::runtime)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
