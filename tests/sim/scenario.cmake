simrun_add_test_exe(test_sim_scenario SOURCES sim/test_scenario.cpp LIBS simrun_sim)
