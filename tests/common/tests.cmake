simrun_add_test_exe(test_common SOURCES common/test_echo.cpp common/test_json_reader.cpp common/test_text.cpp common/test_typed_numbers.cpp LIBS simrun_common)
