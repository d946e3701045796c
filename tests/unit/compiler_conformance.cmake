# Conformance with PyTorch (label "conformance"): torch (torchvision's models, and a bert written with
# BertModel's names) builds the weights, the inputs and the expected outputs, scripts/torch2params.py
# converts the state_dict, and tunehub (reference interpreter and compiled .so) must agree. Cases exit 77
# when /usr/bin/python3 cannot import torch.
th_unit_test(compiler_conformance SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_compiler_conformance.c
             LIBS th_compiler LABELS conformance TIMEOUT 600)
target_compile_definitions(test_compiler_conformance PRIVATE TH_SRC_DIR="${TH_SOURCE_DIR}")
