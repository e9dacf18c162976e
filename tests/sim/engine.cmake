# tests of engine, network, cluster graph, collectives (and their accuracy vs measured NCCL)
simrun_add_test_exe(test_sim_engine
  SOURCES
    sim/test_engine.cpp
    sim/test_network.cpp
    sim/test_cluster_graph.cpp
    sim/test_collectives.cpp
    sim/test_nccl_reference.cpp
  LIBS simrun_sim)
# End-to-end checks of `simrun collective` / `simrun topology` (needs the simrun binary).
simrun_add_test_exe(test_sim_collective_cli SOURCES sim/test_collective_cli.cpp LIBS nlohmann_json::nlohmann_json)
target_compile_definitions(test_sim_collective_cli PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_sim_collective_cli simrun)
