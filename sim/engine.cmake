# sources of the engine area of simrun_sim
