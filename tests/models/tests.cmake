simrun_add_test_exe(test_models
  SOURCES models/test_catalog.cpp models/test_counts.cpp models/test_hf_config.cpp models/test_moe_routing.cpp
  LIBS simrun_models simrun_test_fixtures)
