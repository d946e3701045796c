# The model .so's named inputs and outputs (th_model_run_io, index checks, info tables, manifest) on a CNN,
# bert and vit; a transformer that does not build fails (no skip).
th_unit_test(compiler_model_io SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_model_io.c
             LIBS th_compiler dl TIMEOUT 900)
