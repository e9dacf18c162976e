# tests of engine, network, cluster graph, collectives (and their accuracy vs measured NCCL)
simrun_add_test_exe(test_sim_engine
  SOURCES
    sim/test_engine.cpp
    sim/test_network.cpp
    sim/test_cluster_graph.cpp
    sim/test_collectives.cpp
    sim/test_nccl_reference.cpp
  LIBS simrun_sim)
