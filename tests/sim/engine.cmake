# tests of engine, network, collectives
simrun_add_test_exe(test_sim_engine
  SOURCES
    sim/test_engine.cpp
    sim/test_network.cpp
    sim/test_cluster_graph.cpp
  LIBS simrun_sim)
