# libFuzzer targets (label fuzz). The project builds with gcc; libFuzzer needs clang, so a fuzz target is
# one clang-16 command over exactly the sources it needs (-fsanitize=fuzzer,address,undefined), run as a
# custom command into the build tree. Skipped when clang-16 is not found, cannot link libFuzzer, or TH_FUZZ
# is OFF.
option(TH_FUZZ "Build the libFuzzer targets with clang-16 (tests/fuzz/)" ON)
find_program(TH_CLANG16 clang-16)
if(TH_FUZZ AND TH_CLANG16 AND NOT DEFINED TH_FUZZ_WORKS)
  # clang-16 without its runtime (libclang-rt-16-dev) cannot link -fsanitize=fuzzer: probe once
  set(probe ${CMAKE_BINARY_DIR}/fuzz_probe.c)
  file(WRITE ${probe} "#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
  execute_process(COMMAND ${TH_CLANG16} -fsanitize=fuzzer,address,undefined ${probe} -o ${CMAKE_BINARY_DIR}/fuzz_probe
                  RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(probe_rc EQUAL 0)
    set(TH_FUZZ_WORKS ON CACHE INTERNAL "clang-16 links libFuzzer")
  else()
    set(TH_FUZZ_WORKS OFF CACHE INTERNAL "clang-16 links libFuzzer")
    message(STATUS "fuzz targets skipped: clang-16 cannot link -fsanitize=fuzzer (libclang-rt-16-dev missing?)")
  endif()
endif()
if(TH_FUZZ AND TH_CLANG16 AND TH_FUZZ_WORKS)
  file(GLOB TH_FUZZ_ONNX_SRC CONFIGURE_DEPENDS ${TH_SOURCE_DIR}/compiler/import/*.c)
  # the importer alone: network.c (a network's source, zoo or ONNX) needs the zoo and is no part of the parse
  list(FILTER TH_FUZZ_ONNX_SRC EXCLUDE REGEX "/network\\.c$")
  set(TC_ONNX_GEN_DIR ${CMAKE_BINARY_DIR}/compiler/onnx_gen)
  list(APPEND TH_FUZZ_ONNX_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_onnx.c ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c
       ${TH_SOURCE_DIR}/compiler/graph.c
       ${TH_SOURCE_DIR}/common/th_buf.c ${TH_SOURCE_DIR}/common/th_status.c ${TC_ONNX_GEN_DIR}/onnx/onnx.pb-c.c)
  set(TH_FUZZ_ONNX ${CMAKE_CURRENT_BINARY_DIR}/fuzz_onnx)
  add_custom_command(OUTPUT ${TH_FUZZ_ONNX}
                     COMMAND ${TH_CLANG16} -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
                             -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                             -I${TH_SOURCE_DIR}/common -I${TH_SOURCE_DIR}/compiler -I${TH_SOURCE_DIR}/compiler/ops
                             -I${TH_SOURCE_DIR}/compiler/import -I${CMAKE_CURRENT_SOURCE_DIR}/unit
                             -I${TC_ONNX_GEN_DIR} ${TH_FUZZ_ONNX_SRC}
                             -o ${TH_FUZZ_ONNX} -lprotobuf-c -ljansson -lm
                     DEPENDS ${TH_FUZZ_ONNX_SRC} VERBATIM)
  add_custom_target(fuzz_onnx ALL DEPENDS ${TH_FUZZ_ONNX})
  add_dependencies(fuzz_onnx tc_onnx_proto) # the generated onnx.pb-c.c
  add_test(NAME fuzz.onnx COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run.sh ${TH_FUZZ_ONNX}
                                  $<TARGET_FILE:test_compiler_onnx> ${TH_SOURCE_DIR} 60)
  set_tests_properties(fuzz.onnx PROPERTIES LABELS fuzz TIMEOUT 300)
endif()
