# sources of the analytic area of simrun_sim: closed-form FLOPs, memory, step time, run totals,
# collective α-β costs, the report JSON and the textbook exercises.
target_sources(simrun_sim PRIVATE
  src/analytic.cpp
  src/collective_cost.cpp
  src/fabric_collective_cost.cpp  # NCCL multi-node algorithms in closed form
  src/explain.cpp         # --explain entries shared with the event simulation
  src/memory_model.cpp
  src/run_cost.cpp
  src/step_time_estimate.cpp  # the closed-form step time: stages and pipeline
  src/step_time_estimate_data_parallel.cpp  # ... its data-parallel traffic
  src/textbook.cpp
  src/workload_probe.cpp  # the workload builder's ops of one micro-batch, for the estimate
)
