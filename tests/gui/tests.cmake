# gui/: the state, the worker and the timeline model in-process (no window); simrun-gui headless
# under xvfb-run where it is built (skipped, with a warning, without xvfb-run).
simrun_add_test_exe(test_gui SOURCES gui/test_timeline_model.cpp gui/test_gui_state.cpp
  LIBS simrun_gui_core simrun_test_fixtures)
target_compile_definitions(test_gui PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>")  # cli_run.hpp's scratch files
if(SIMRUN_HAVE_GUI)
  simrun_add_test_exe(test_gui_headless SOURCES gui/test_gui_headless.cpp
    LIBS nlohmann_json::nlohmann_json simrun_test_fixtures PkgConfig::SIMRUN_IMGUI)
  target_compile_definitions(test_gui_headless PRIVATE SIMRUN_GUI_BINARY="$<TARGET_FILE:simrun-gui>"
                                                      SIMRUN_BINARY="$<TARGET_FILE:simrun>")
  add_dependencies(test_gui_headless simrun-gui)
endif()
