# The model .so's named inputs and outputs (th_model_run_io, index checks, info tables, manifest) on a CNN,
# bert and vit; the transformer cases skip (77) while a tensor family has no CPU template.
th_unit_test(compiler_model_io SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_model_io.c
             LIBS th_compiler dl TIMEOUT 900)
