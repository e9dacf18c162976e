# End-to-end tests of the simrun command (exit codes, one-line errors, JSON keys).
simrun_add_test_exe(test_cli SOURCES cli/test_cli.cpp LIBS simrun_common fmt::fmt)
target_compile_definitions(test_cli PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_cli simrun)
