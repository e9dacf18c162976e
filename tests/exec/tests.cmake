# exec/: the cpu backend, the faithful slice, the calibration fit and the comparison in-process;
# the whole `simrun validate` loop, its refusals and its watchdog under mpirun (skipped, with a
# warning, without MPI).
simrun_add_test_exe(test_exec
  SOURCES exec/test_calibration_fit.cpp exec/test_slice.cpp exec/test_cpu_backend.cpp exec/test_comparison.cpp
          exec/test_launch_order.cpp
  LIBS simrun_exec simrun_test_fixtures)
target_include_directories(test_exec PRIVATE ${CMAKE_SOURCE_DIR}/exec/src)  # launch_order.hpp
# Its runs time the machine: they run alone (RUN_SERIAL), not beside other tests. Under the
# sanitizers they check files, not the calibrated bound (SIMRUN_SANITIZED below), and run beside
# the other tests, one mpirun at a time (RESOURCE_LOCK): their stop bound (120 s) stays far above
# the 35-45 s a faulty run takes there.
if(SIMRUN_SANITIZE)
  set(validate_mpi_properties RESOURCE_LOCK validate_mpi)
else()
  set(validate_mpi_properties RUN_SERIAL TRUE)
endif()
simrun_add_test_exe(test_validate_mpi SOURCES exec/test_validate_mpi.cpp
  LIBS nlohmann_json::nlohmann_json simrun_test_fixtures PROPERTIES ${validate_mpi_properties})
target_compile_definitions(test_validate_mpi PRIVATE SIMRUN_BINARY="$<TARGET_FILE:simrun>"
                                                     SIMRUN_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
if(SIMRUN_HAVE_MPI)
  target_compile_definitions(test_validate_mpi PRIVATE SIMRUN_HAVE_MPI SIMRUN_MPIEXEC="${MPIEXEC_EXECUTABLE}")
endif()
add_dependencies(test_validate_mpi simrun)
if(SIMRUN_SANITIZE)  # its loop checks files, not timing, under the sanitizers
  target_compile_definitions(test_validate_mpi PRIVATE SIMRUN_SANITIZED)
endif()
# The cuda backend's host-side rules, where it is built (no device needed).
if(TARGET simrun_kernels_cuda AND SIMRUN_HAVE_MPI AND SIMRUN_NCCL_LIBRARY)
  simrun_add_test_exe(test_cuda_backend SOURCES exec/test_cuda_backend.cpp
    LIBS simrun_exec simrun_kernels_cuda CUDA::cublasLt simrun_test_fixtures)
  target_include_directories(test_cuda_backend PRIVATE ${CMAKE_SOURCE_DIR}/exec/src)
endif()
