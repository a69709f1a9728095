# tiledsl_add_aot_kernels(<name> GENERATOR <executable target> TARGETS <t>...
#                         [NAMESPACE <ns>] [PTXAS <path>] [PTX_ONLY])
#
# Runs the generator (a program calling tl::aot::main, tiledsl/aot.h) at
# build time to compile its kernels for the targets (sm_80, sm_90a,
# gfx942, ...), and makes <name>: a static library of the generated source
# whose header <name>.h declares the kernels' accessors, linked with
# tiledsl::runtime (no compiler, no LLVM). The binaries are also written,
# one file each, under <build dir>/<name>_binaries/ for disassembly.
#
# NVIDIA binaries are cubins for exactly their target when a ptxas is at
# hand (PTXAS, else TILEDSL_AOT_PTXAS: the CUDA toolkit's, looked for
# below), so the program loads machine code without the driver's JIT;
# otherwise, or with PTX_ONLY, PTX, which the driver assembles on first use.
find_program(TILEDSL_AOT_PTXAS ptxas HINTS /usr/local/cuda/bin ENV CUDA_PATH PATH_SUFFIXES bin)
function(tiledsl_add_aot_kernels name)
  cmake_parse_arguments(ARG "PTX_ONLY" "GENERATOR;NAMESPACE;PTXAS" "TARGETS" ${ARGN})
  if(NOT ARG_GENERATOR OR NOT ARG_TARGETS)
    message(FATAL_ERROR "tiledsl_add_aot_kernels(${name}): GENERATOR and TARGETS are required")
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${name})
  list(JOIN ARG_TARGETS "," targets)
  set(ns "")
  if(ARG_NAMESPACE)
    set(ns --namespace=${ARG_NAMESPACE})
  endif()
  set(ptxas "")
  if(NOT ARG_PTX_ONLY)
    if(ARG_PTXAS)
      set(ptxas --ptxas=${ARG_PTXAS})
    elseif(TILEDSL_AOT_PTXAS)
      set(ptxas --ptxas=${TILEDSL_AOT_PTXAS})
    endif()
  endif()
  add_custom_command(OUTPUT ${out}.cpp ${out}.h
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${out}_binaries
    COMMAND $<TARGET_FILE:${ARG_GENERATOR}> --targets=${targets} --output=${out}.cpp ${ns}
            --binaries=${out}_binaries ${ptxas}
    DEPENDS ${ARG_GENERATOR}
    COMMENT "tiledsl: compiling ${name} ahead of time for ${targets}"
    VERBATIM)
  add_library(${name} STATIC ${out}.cpp ${out}.h)
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_BINARY_DIR})
  target_link_libraries(${name} PUBLIC tiledsl::runtime)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
