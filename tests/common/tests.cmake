simrun_add_test_exe(test_common SOURCES common/test_echo.cpp common/test_json_reader.cpp LIBS simrun_common)
