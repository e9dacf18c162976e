# Tests of the simulator's areas, one executable per folder (tests/sim/<area> mirrors sim/<area>).
simrun_add_test_exe(test_sim_framework SOURCES sim/framework/test_profile.cpp LIBS simrun_sim_framework simrun_test_fixtures)
simrun_add_test_exe(test_sim_scenario SOURCES sim/scenario/test_scenario.cpp sim/scenario/test_layout_rules.cpp sim/scenario/test_rank_layout.cpp LIBS simrun_sim_scenario simrun_sim simrun_test_fixtures)
simrun_add_test_exe(test_sim_workload SOURCES sim/workload/test_workload.cpp sim/workload/test_workload_moe.cpp
                    sim/workload/test_schedule.cpp LIBS simrun_sim_workload simrun_sim simrun_test_fixtures)
simrun_add_test_exe(test_sim_cost SOURCES sim/cost/test_compute_model.cpp sim/cost/test_calibration.cpp LIBS simrun_sim_cost simrun_sim simrun_test_fixtures)
simrun_add_test_exe(test_sim_engine SOURCES sim/engine/test_engine.cpp LIBS simrun_sim_engine simrun_sim simrun_test_fixtures)
simrun_add_test_exe(test_sim_network SOURCES sim/network/test_max_min.cpp sim/network/test_network.cpp LIBS simrun_sim_network simrun_sim simrun_test_fixtures)
simrun_add_test_exe(test_sim_collectives SOURCES sim/collectives/test_collectives.cpp sim/collectives/test_collective_cost.cpp LIBS simrun_sim_collectives simrun_sim simrun_test_fixtures)
simrun_add_test_exe(test_sim_memory SOURCES sim/memory/test_memory_model.cpp sim/memory/test_run_cost.cpp LIBS simrun_sim_memory simrun_sim_workload simrun_validation simrun_test_fixtures)
simrun_add_test_exe(test_sim_analytic SOURCES sim/analytic/test_analytic.cpp sim/analytic/test_agreement_envelope.cpp
                    sim/analytic/test_step_time_floor.cpp LIBS simrun_sim_analytic simrun_sim simrun_test_fixtures)
simrun_add_test_exe(test_sim_event SOURCES sim/event/test_step_executor.cpp sim/event/test_degraded.cpp sim/event/test_host_overhead.cpp sim/event/test_deepspeed.cpp sim/event/test_trace.cpp sim/event/test_progress.cpp LIBS simrun_sim_event simrun_sim simrun_test_fixtures)
simrun_add_test_exe(test_sim_planner SOURCES sim/planner/test_plan_partial.cpp sim/planner/test_planner.cpp LIBS simrun_sim_planner simrun_test_fixtures)
