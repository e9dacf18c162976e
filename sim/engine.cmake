# sources of the engine area of simrun_sim: event engine, flow-level network, collectives, tuner
target_sources(simrun_sim PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/src/engine.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/network.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/comm_types.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/collective_tuner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/collective_algorithms.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/collectives.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/collective_sweep.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/simulation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/nccl_reference.cpp
)
