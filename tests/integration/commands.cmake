# The subcommand table (issue 37): help, the unknown-command list and the dispatch name the same commands.
th_integration_test(commands_table TIMEOUT 120
                    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/commands.sh table
                    ENVIRONMENT "TUNEHUB=$<TARGET_FILE:tunehub>")
