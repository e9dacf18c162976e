simrun_add_test_exe(test_models
  SOURCES models/test_catalog.cpp models/test_counts.cpp models/test_hf_config.cpp
  LIBS simrun_models)
