simrun_add_test_exe(test_models SOURCES models/test_catalog.cpp LIBS simrun_models)
