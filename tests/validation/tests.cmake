# The yardstick's tests: measured runs, NCCL rows, the textbook exercises.
simrun_add_test_exe(test_validation
  SOURCES validation/test_measured_runs.cpp validation/test_nccl_reference.cpp validation/test_textbook.cpp
          validation/test_prediction_band.cpp
  LIBS simrun_validation simrun_test_fixtures)
