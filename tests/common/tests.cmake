simrun_add_test_exe(test_common SOURCES common/test_echo.cpp common/test_json_reader.cpp common/test_text.cpp LIBS simrun_common)
