# sources of the workload area of simrun_sim
