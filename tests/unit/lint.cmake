# scripts/lint.sh (banned functions; clang-format once .clang-format-enforced exists) on trees of its own and
# on this one.
add_test(NAME lint.banned_and_format COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_lint.sh)
set_tests_properties(lint.banned_and_format PROPERTIES LABELS unit TIMEOUT 120)
