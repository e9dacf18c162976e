# tests of the workload builder and step simulation
simrun_add_test_exe(test_sim_workload
  SOURCES
    sim/test_rank_layout.cpp
    sim/test_compute_model.cpp
    sim/test_workload.cpp
    sim/test_step_simulator.cpp
    sim/test_trace.cpp
    sim/test_measured_runs.cpp
  LIBS simrun_sim)
target_include_directories(test_sim_workload PRIVATE ${CMAKE_SOURCE_DIR}/sim/src ${CMAKE_CURRENT_LIST_DIR}/sim)
