simrun_add_test_exe(test_kernels_ref SOURCES kernels/test_ref.cpp LIBS simrun_kernels)
