# End-to-end tests of the simrun command (exit codes, one-line errors, JSON keys).
simrun_add_test_exe(test_cli SOURCES cli/test_cli.cpp cli/test_cli_moe.cpp cli/test_cli_trace.cpp LIBS simrun_common fmt::fmt simrun_test_fixtures)
target_compile_definitions(test_cli PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>"
                                            SIMRUN_VERSION="${PROJECT_VERSION}")
add_dependencies(test_cli simrun)
# The subcommands walked in-process (help text on every option, the field -> flag table).
simrun_add_test_exe(test_cli_options SOURCES cli/test_cli_options.cpp LIBS simrun_cli simrun_test_fixtures)
target_compile_definitions(test_cli_options PRIVATE SIMRUN_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# End-to-end checks of `simrun collective` / `simrun topology` (needs the simrun binary).
simrun_add_test_exe(test_collective_cli SOURCES cli/test_collective_cli.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_collective_cli PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_collective_cli simrun)
# The bad-input corpus (tests/data/bad_scenarios) and inputs built at run time.
simrun_add_test_exe(test_bad_input SOURCES cli/test_bad_input.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_bad_input PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>"
                                                  SIMRUN_TEST_DATA_DIR="${CMAKE_SOURCE_DIR}/tests/data")
add_dependencies(test_bad_input simrun)
# Megatron-LM's argument names (cli/flag_names.cpp) on the simrun command.
simrun_add_test_exe(test_megatron_flags SOURCES cli/test_megatron_flags.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_megatron_flags PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>"
                                                       SIMRUN_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
add_dependencies(test_megatron_flags simrun)
# `cmake --install` of this build into a folder of it, then the installed binary run from an
# unrelated folder on an installed example (tests/cli/install_check.cmake).
set(SIMRUN_INSTALL_CHECK_PREFIX "${CMAKE_BINARY_DIR}/install-check")
add_test(NAME install:setup
         COMMAND ${CMAKE_COMMAND} -DSTEP=install -DBUILD_DIR=${CMAKE_BINARY_DIR}
                 -DPREFIX=${SIMRUN_INSTALL_CHECK_PREFIX} -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/install_check.cmake)
add_test(NAME install:installed_binary_runs_an_example_from_another_folder
         COMMAND ${CMAKE_COMMAND} -DSTEP=run -DPREFIX=${SIMRUN_INSTALL_CHECK_PREFIX}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/install_check.cmake)
set_tests_properties(install:setup PROPERTIES FIXTURES_SETUP simrun_installed TIMEOUT 120)
set_tests_properties(install:installed_binary_runs_an_example_from_another_folder
                     PROPERTIES FIXTURES_REQUIRED simrun_installed TIMEOUT 300)
# Inline GPUs and fabrics, user catalog folders (--catalog, SIMRUN_CATALOG).
simrun_add_test_exe(test_catalogs SOURCES cli/test_catalogs.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_catalogs PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_catalogs simrun)
# Reports fit for sweeps: inputs echoed, integer bytes, --no-timing, full-precision CSV (issue 22).
simrun_add_test_exe(test_sweep_output SOURCES cli/test_sweep_output.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_sweep_output PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_sweep_output simrun)
# `simrun accuracy`: the shipped yardstick once, files of other runs, bad files (validation/accuracy.hpp);
# the step time's prediction band in estimate and simulate, and accuracy --write-bands.
simrun_add_test_exe(test_accuracy SOURCES cli/test_accuracy.cpp cli/test_step_time_band.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_accuracy PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_accuracy simrun)
# The progress line and the shell completion scripts (in-process and through the simrun binary).
simrun_add_test_exe(test_cli_shell SOURCES cli/test_progress.cpp cli/test_completion.cpp
                    LIBS simrun_cli simrun_test_fixtures)
target_compile_definitions(test_cli_shell PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_cli_shell simrun)
# Framework profiles on the command line: "framework", --framework, flags over the profile, --explain.
simrun_add_test_exe(test_framework_cli SOURCES cli/test_framework_cli.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_framework_cli PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_framework_cli simrun)
# `simrun plan`: the chapter's example simulated back, plan files, threads, limits, the progress
# line on a pseudo-terminal, Ctrl-C, exit 3 and bad input (sim/planner, docs/planner.md).
simrun_add_test_exe(test_plan SOURCES cli/test_plan.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_plan PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
add_dependencies(test_plan simrun)
# `simrun plan` under mpirun: 1 and 4 ranks rank as one process does; bad input one line from rank 0
# (skipped with a warning without MPI: SIMRUN_HAVE_MPI, MPIEXEC_EXECUTABLE from find_package(MPI)).
simrun_add_test_exe(test_plan_mpi SOURCES cli/test_plan_mpi.cpp LIBS nlohmann_json::nlohmann_json simrun_test_fixtures)
target_compile_definitions(test_plan_mpi PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")
if(SIMRUN_HAVE_MPI)
  target_compile_definitions(test_plan_mpi PRIVATE SIMRUN_HAVE_MPI SIMRUN_MPIEXEC="${MPIEXEC_EXECUTABLE}")
endif()
add_dependencies(test_plan_mpi simrun)
