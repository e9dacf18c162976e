# The installed simrun runs from an unrelated folder (docs/catalogs.md "Installing"). Run by CTest
# (tests/cli/tests.cmake) in two steps:
#   cmake -DSTEP=install -DBUILD_DIR=<build> -DPREFIX=<prefix> -P install_check.cmake
#       a fresh `cmake --install <build> --prefix <prefix>` (the fixture's setup);
#   cmake -DSTEP=run -DPREFIX=<prefix> -P install_check.cmake
#       <prefix>/bin/simrun on <prefix>/share/simrun/examples from a new folder under the system's
#       temporary folder, SIMRUN_DATA_DIR and SIMRUN_CATALOG unset: exit 0 and a report (and
#       `simrun accuracy` on a group of the installed yardstick). Then a GPU
#       that exists only in the installed catalog proves that the catalogs are read from beside
#       the binary, not from the source tree the binary was built from.
cmake_minimum_required(VERSION 3.25)

function(require_run out_var)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${cwd}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "exit ${rc} from: ${ARGN}\n(in ${cwd})\nstdout: ${out}\nstderr: ${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(require_contains text expected what)
  string(FIND "${text}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected \"${expected}\" in:\n${text}")
  endif()
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE "${PREFIX}")
  execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}\n${err}")
  endif()
  return()
endif()

if(NOT STEP STREQUAL "run")
  message(FATAL_ERROR "STEP must be install or run, got '${STEP}'")
endif()

set(simrun "${PREFIX}/bin/simrun")
set(share "${PREFIX}/share/simrun")
foreach(path "${simrun}" "${share}/models/catalog" "${share}/topologies/gpus" "${share}/topologies/fabrics"
             "${share}/examples/llama3-70b-h100.json" "${share}/validation/data/measured-runs.json")
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "not installed: ${path}")
  endif()
endforeach()

unset(ENV{SIMRUN_DATA_DIR})
unset(ENV{SIMRUN_CATALOG})
set(tmp "$ENV{TMPDIR}")
if(NOT tmp OR NOT IS_DIRECTORY "${tmp}")
  set(tmp "/tmp")
endif()
string(RANDOM LENGTH 10 suffix)
set(cwd "${tmp}/simrun-install-check-${suffix}")
file(MAKE_DIRECTORY "${cwd}")

# The main job and the estimate on installed examples.
require_run(out "${simrun}" "${share}/examples/llama3-8b-fsdp-h100.json")
require_contains("${out}" "llama3-8b" "simrun EXAMPLE")
require_run(out "${simrun}" estimate "${share}/examples/llama3-70b-h100.json" --json)
require_contains("${out}" "\"step_time_s\"" "simrun estimate EXAMPLE --json")
require_run(out "${simrun}" textbook 4)
require_contains("${out}" "full model" "simrun textbook 4 (its scenario is an installed example)")
require_run(out "${simrun}" accuracy --group megatron_gpt3)
require_contains("${out}" "megatron_readme_gpt3_175B_1024gpu" "simrun accuracy (the installed yardstick)")

# A GPU only the installed catalog has.
set(marker "${share}/topologies/gpus/install-check-gpu.json")
file(COPY_FILE "${share}/topologies/gpus/h100-sxm.json" "${marker}")
execute_process(COMMAND "${simrun}" estimate --model llama3-8b --gpu install-check-gpu --gpus 8
                WORKING_DIRECTORY "${cwd}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE "${marker}")
file(REMOVE_RECURSE "${cwd}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed binary did not read the installed catalog (exit ${rc}): ${err}")
endif()
require_contains("${out}" "install-check-gpu" "the installed catalog's GPU")
message(STATUS "installed simrun ran from ${cwd}")
