simrun_add_test_exe(test_sim_scenario SOURCES sim/test_scenario.cpp sim/test_layout_rules.cpp LIBS simrun_sim)
