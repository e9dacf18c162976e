# tests of the analytic area (tests/sim/test_*.cpp): collectives α-β, memory, run totals,
# the estimate, the textbook exercises.
simrun_add_test_exe(test_sim_analytic
  SOURCES
    sim/test_collective_cost.cpp
    sim/test_memory_model.cpp
    sim/test_run_cost.cpp
    sim/test_analytic.cpp
    sim/test_textbook.cpp
  LIBS simrun_sim)
