# sources of the workload area of simrun_sim: rank layout, compute model, calibration,
# workload builder, step simulator, trace
target_sources(simrun_sim PRIVATE
  src/rank_layout.cpp
  src/compute_model.cpp
  src/calibration.cpp
  src/workload.cpp
  src/schedule.cpp
  src/workload_builder.cpp
  src/workload_builder_step.cpp
  src/workload_cost.cpp
  src/measured_runs.cpp
)
target_sources(simrun_sim PRIVATE src/step_simulator.cpp src/simulate.cpp src/trace.cpp)
