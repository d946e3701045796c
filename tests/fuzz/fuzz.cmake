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
  set(TH_FUZZ_SECONDS 20 CACHE STRING "Seconds each fuzz target runs in its ctest test (fuzz.*)")
  set(TH_FUZZ_CFLAGS -std=c11 -D_GNU_SOURCE -DTH_VERSION="${PROJECT_VERSION}" -g -O1 -fno-omit-frame-pointer
      -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Wall -Wextra -Wshadow
      -Wstrict-prototypes -Wno-for-loop-analysis) # argv loops step i in the body to take a flag's value
  if(TH_WERROR)
    list(APPEND TH_FUZZ_CFLAGS -Werror)
  endif()
  file(GLOB TH_FUZZ_COMMON CONFIGURE_DEPENDS ${TH_SOURCE_DIR}/common/*.c)
  set(TH_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)

  # th_fuzz_target(name SOURCES src... [INCLUDES dir...] [DEFINES -Dx...] [LIBS arg...] [DEPENDS target...] [SEED cmd...]):
  # fuzz_<name> from tests/fuzz/fuzz_<name>.c, the product sources it fuzzes and common/ (all instrumented),
  # linked with LIBS; the ctest test fuzz.<name> (label fuzz) runs it through run.sh for TH_FUZZ_SECONDS, with
  # SEED, when given, writing more seeds into the directory run.sh appends.
  function(th_fuzz_target name)
    cmake_parse_arguments(F "" "" "SOURCES;INCLUDES;DEFINES;LIBS;DEPENDS;SEED" ${ARGN})
    set(bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz_${name})
    set(srcs ${TH_FUZZ_DIR}/fuzz_${name}.c ${F_SOURCES} ${TH_FUZZ_COMMON})
    set(incs -I${TH_SOURCE_DIR}/common)
    foreach(d ${F_INCLUDES})
      list(APPEND incs -I${d})
    endforeach()
    add_custom_command(OUTPUT ${bin}
                       COMMAND ${TH_CLANG16} ${TH_FUZZ_CFLAGS} ${F_DEFINES} ${incs} ${srcs} -o ${bin} ${F_LIBS} -lpthread -lm
                       DEPENDS ${srcs} ${F_DEPENDS} VERBATIM)
    add_custom_target(fuzz_${name} ALL DEPENDS ${bin})
    if(F_DEPENDS)
      add_dependencies(fuzz_${name} ${F_DEPENDS})
    endif()
    add_test(NAME fuzz.${name} COMMAND ${TH_FUZZ_DIR}/run.sh ${name} ${bin} ${TH_SOURCE_DIR} ${TH_FUZZ_SECONDS}
                                       ${F_SEED})
    # the replay and the fixed fuzzing time, plus the start-up (fuzz.http starts a daemon)
    math(EXPR limit "${TH_FUZZ_SECONDS} * 3 + 120")
    set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT ${limit})
  endfunction()

  # the graph IR (graph.c and the files beside it: its constructors and JSON dump)
  file(GLOB TH_FUZZ_GRAPH_SRC CONFIGURE_DEPENDS ${TH_SOURCE_DIR}/compiler/graph*.c)
  # the ONNX importer alone: network.c (a network's source, zoo or ONNX) needs the zoo and is no part of the parse
  file(GLOB TH_FUZZ_ONNX_SRC CONFIGURE_DEPENDS ${TH_SOURCE_DIR}/compiler/import/*.c)
  list(FILTER TH_FUZZ_ONNX_SRC EXCLUDE REGEX "/network\\.c$")
  set(TC_ONNX_GEN_DIR ${CMAKE_BINARY_DIR}/compiler/onnx_gen)
  th_fuzz_target(onnx
    SOURCES ${TH_FUZZ_ONNX_SRC} ${CMAKE_CURRENT_SOURCE_DIR}/unit/onnx_build.c ${TH_FUZZ_GRAPH_SRC}
            ${TC_ONNX_GEN_DIR}/onnx/onnx.pb-c.c
    INCLUDES ${TH_SOURCE_DIR}/compiler ${TH_SOURCE_DIR}/compiler/include/tc ${TH_SOURCE_DIR}/compiler/ops
             ${TH_SOURCE_DIR}/compiler/import
             ${CMAKE_CURRENT_SOURCE_DIR}/unit ${TC_ONNX_GEN_DIR}
    LIBS -lprotobuf-c -ljansson
    DEPENDS tc_onnx_proto # the generated onnx.pb-c.c
    SEED ${TH_FUZZ_DIR}/seeds_onnx.sh $<TARGET_FILE:test_compiler_onnx> ${TH_SOURCE_DIR})

  # server/ headers pull in libmicrohttpd's, the store's, the tuner's and the compiler's public ones
  # (srv_int.h sizes its per-backend arrays by backend.h's TC_BACKEND_COUNT)
  set(TH_FUZZ_SRV_INC ${TH_SOURCE_DIR}/server ${TH_SOURCE_DIR}/store ${TH_SOURCE_DIR}/tuner
      ${TH_SOURCE_DIR}/compiler ${TH_SOURCE_DIR}/compiler/include ${TH_SOURCE_DIR}/compiler/include/tc
      ${TH_SOURCE_DIR}/compiler/ir ${TH_SOURCE_DIR}/compiler/ops
      ${TH_SOURCE_DIR}/compiler/import ${TH_SOURCE_DIR}/compiler/runtime)
  th_fuzz_target(headers SOURCES ${TH_SOURCE_DIR}/server/response.c ${TH_SOURCE_DIR}/server/request.c
                 INCLUDES ${TH_FUZZ_SRV_INC} LIBS ${MHD_LINK_LIBRARIES} ${JANSSON_LINK_LIBRARIES})
  th_fuzz_target(json_bodies SOURCES ${TH_SOURCE_DIR}/server/request.c INCLUDES ${TH_FUZZ_SRV_INC}
                 LIBS ${JANSSON_LINK_LIBRARIES})
  th_fuzz_target(last_event_id SOURCES ${TH_SOURCE_DIR}/server/request.c INCLUDES ${TH_FUZZ_SRV_INC}
                 LIBS ${JANSSON_LINK_LIBRARIES})
  th_fuzz_target(params
    SOURCES ${TH_SOURCE_DIR}/compiler/params.c ${TH_SOURCE_DIR}/compiler/runtime/th_params.c
            ${TH_FUZZ_GRAPH_SRC}
    INCLUDES ${TH_SOURCE_DIR}/compiler ${TH_SOURCE_DIR}/compiler/include/tc ${TH_SOURCE_DIR}/compiler/runtime
             ${TH_SOURCE_DIR}/compiler/ops
    LIBS ${JANSSON_LINK_LIBRARIES})
  th_fuzz_target(bundle SOURCES ${TH_SOURCE_DIR}/compiler/bundle_read.c
                 INCLUDES ${TH_SOURCE_DIR}/compiler ${TH_SOURCE_DIR}/compiler/include/tc
                 LIBS ${ARCHIVE_LINK_LIBRARIES} ${JANSSON_LINK_LIBRARIES})

  # fuzz.http: the daemon's own code (server/ and common/) instrumented; the store, tuner and compiler are the
  # gcc-built libraries as they are (libFuzzer needs clang, and building those three again with it would double
  # the build). A sanitizer build (TH_SANITIZE) instruments them with gcc's runtime, which cannot share a
  # process with clang's: then this target is skipped.
  if(NOT TH_SANITIZE)
    file(GLOB TH_FUZZ_SRV_SRC CONFIGURE_DEPENDS ${TH_SOURCE_DIR}/server/*.c)
    list(FILTER TH_FUZZ_SRV_SRC EXCLUDE REGEX "/main\\.c$")
    set(TH_FUZZ_NVRTC "")
    if(TH_HAVE_CUDA)
      set(TH_FUZZ_NVRTC ${CUDA_NVRTC_LIBRARY})
    endif()
    set(TH_FUZZ_SRV_LIBS $<TARGET_FILE:th_tuner> $<TARGET_FILE:th_compiler> $<TARGET_FILE:th_store>)
    th_fuzz_target(http
      SOURCES ${TH_FUZZ_SRV_SRC}
      INCLUDES ${TH_FUZZ_SRV_INC} ${TH_SOURCE_DIR}/compiler/ops ${TH_SOURCE_DIR}/compiler/zoo
               ${TH_SOURCE_DIR}/compiler/import ${TH_SOURCE_DIR}/compiler/ir ${TH_SOURCE_DIR}/compiler/cuda
               ${LLVM_INCLUDE_DIR}
      DEFINES -DTH_WEB_DIR="${TH_SOURCE_DIR}/web"
      LIBS -Wl,--start-group ${TH_FUZZ_SRV_LIBS} -Wl,--end-group
           ${MHD_LINK_LIBRARIES} ${SQLITE_LINK_LIBRARIES} ${LIBPQ_LINK_LIBRARIES} ${JANSSON_LINK_LIBRARIES}
           ${ARCHIVE_LINK_LIBRARIES} ${PROTOBUFC_LINK_LIBRARIES} ${CRYPTO_LINK_LIBRARIES} ${XGBOOST_LIBRARY}
           ${LLVM_LIBRARY}
           ${TH_FUZZ_NVRTC} -ldl
      DEPENDS th_tuner th_compiler th_store)
  endif()
endif()
