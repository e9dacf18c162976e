# Rules about the code's shape that the compiler cannot check (read from the sources).
simrun_add_test_exe(test_architecture SOURCES architecture/test_error_flow.cpp architecture/test_dependencies.cpp)
target_compile_definitions(test_architecture PRIVATE SIMRUN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
