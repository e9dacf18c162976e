simrun_add_test_exe(test_kernels_ref SOURCES kernels/test_ref.cpp LIBS simrun_kernels)
# The CUDA kernels against their references (tagged [gpu]; each case skips without a device).
if(SIMRUN_HAVE_CUDA)
  simrun_add_test_exe(test_kernels_cuda SOURCES kernels/test_cuda_kernels.cpp LIBS simrun_kernels_cuda)
  simrun_add_test_exe(test_kernels_cuda_attention SOURCES kernels/test_cuda_attention.cpp LIBS simrun_kernels_cuda)
endif()
