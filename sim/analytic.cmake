# sources of the analytic area of simrun_sim
