# End-to-end tests of the simrun command (exit codes, one-line errors, JSON keys).
simrun_add_test_exe(test_cli SOURCES cli/test_cli.cpp LIBS simrun_common fmt::fmt)
target_compile_definitions(test_cli PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>"
                                            SIMRUN_VERSION="${PROJECT_VERSION}")
add_dependencies(test_cli simrun)
# The subcommands walked in-process (help text on every option, the field -> flag table).
simrun_add_test_exe(test_cli_options SOURCES cli/test_cli_options.cpp LIBS simrun_cli)
# End-to-end checks of `simrun collective` / `simrun topology` (needs the simrun binary).
simrun_add_test_exe(test_collective_cli SOURCES cli/test_collective_cli.cpp LIBS nlohmann_json::nlohmann_json)
target_compile_definitions(test_collective_cli PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_collective_cli simrun)
# The bad-input corpus (tests/data/bad_scenarios) and inputs built at run time.
simrun_add_test_exe(test_bad_input SOURCES cli/test_bad_input.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_bad_input PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>"
                                                  SIMRUN_TEST_DATA_DIR="${CMAKE_SOURCE_DIR}/tests/data")
add_dependencies(test_bad_input simrun)
# The progress line and the shell completion scripts (in-process and through the simrun binary).
simrun_add_test_exe(test_cli_shell SOURCES cli/test_progress.cpp cli/test_completion.cpp
                    LIBS simrun_cli simrun_test_fixtures)
target_compile_definitions(test_cli_shell PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_cli_shell simrun)
