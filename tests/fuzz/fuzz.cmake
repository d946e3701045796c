# libFuzzer targets (label fuzz). The project builds with gcc; libFuzzer needs clang, so a fuzz target is
# one clang-16 command over exactly the sources it needs (-fsanitize=fuzzer,address,undefined), run as a
# custom command into the build tree. Skipped when clang-16 is not found or TH_FUZZ is OFF.
option(TH_FUZZ "Build the libFuzzer targets with clang-16 (tests/fuzz/)" ON)
find_program(TH_CLANG16 clang-16)
if(TH_FUZZ AND TH_CLANG16)
  file(GLOB TH_FUZZ_ONNX_SRC CONFIGURE_DEPENDS ${TH_SOURCE_DIR}/compiler/import/*.c)
  # the importer alone: network.c (a network's source, zoo or ONNX) needs the zoo and is no part of the parse
  list(FILTER TH_FUZZ_ONNX_SRC EXCLUDE REGEX "/network\\.c$")
  set(TC_ONNX_GEN_DIR ${CMAKE_BINARY_DIR}/compiler/onnx_gen)
  list(APPEND TH_FUZZ_ONNX_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_onnx.c ${TH_SOURCE_DIR}/compiler/graph.c
       ${TH_SOURCE_DIR}/common/th_buf.c ${TH_SOURCE_DIR}/common/th_status.c ${TC_ONNX_GEN_DIR}/onnx/onnx.pb-c.c)
  set(TH_FUZZ_ONNX ${CMAKE_CURRENT_BINARY_DIR}/fuzz_onnx)
  add_custom_command(OUTPUT ${TH_FUZZ_ONNX}
                     COMMAND ${TH_CLANG16} -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
                             -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                             -I${TH_SOURCE_DIR}/common -I${TH_SOURCE_DIR}/compiler -I${TH_SOURCE_DIR}/compiler/ops
                             -I${TH_SOURCE_DIR}/compiler/import -I${TC_ONNX_GEN_DIR} ${TH_FUZZ_ONNX_SRC}
                             -o ${TH_FUZZ_ONNX} -lprotobuf-c -ljansson -lm
                     DEPENDS ${TH_FUZZ_ONNX_SRC} VERBATIM)
  add_custom_target(fuzz_onnx ALL DEPENDS ${TH_FUZZ_ONNX})
  add_dependencies(fuzz_onnx tc_onnx_proto) # the generated onnx.pb-c.c
  add_test(NAME fuzz.onnx COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run.sh ${TH_FUZZ_ONNX}
                                  $<TARGET_FILE:test_compiler_onnx> ${TH_SOURCE_DIR} 60)
  set_tests_properties(fuzz.onnx PROPERTIES LABELS fuzz TIMEOUT 300)
endif()
