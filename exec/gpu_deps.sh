#!/usr/bin/env bash
# The Debian packages exec/gpu_check.sh needs on a lent GPU machine, whose image has CMake, ninja
# and the CUDA Toolkit but not the simulator's libraries, and reaches no package registry
# (the device tool's KINDS.md). Two steps:
#   exec/gpu_deps.sh fetch            here (Debian 12, network): the .deb files into .gpu-deps/
#                                     (ignored by git; name it in the device run's `carry`)
#   source exec/gpu_deps.sh unpack    there, from the repository root: unpacks them under
#                                     /tmp/simrun-deps (never over /) and exports the paths CMake,
#                                     the compiler, the loader and Open MPI read
# The list: the build's headers (nlohmann-json, Catch2, fmt, CLI11, Eigen, Boost.Graph), Open MPI
# with its run-time libraries, and what those need beyond a base system.
packages=(nlohmann-json3-dev catch2 libfmt-dev libfmt9 libcli11-dev libeigen3-dev
          libboost1.74-dev libboost-graph1.74-dev libboost-graph-dev
          libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 libhwloc-plugins
          libevent-2.1-7 libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libucx0 libpsm2-2
          libpsm-infinipath1 librdmacm1 libibverbs1 libnl-3-200 libnl-route-3-200 libxnvctrl0 libmunge2
          libnuma1 libpciaccess0 libxml2 libicu72 libx11-6 libxext6 libxcb1 libxau6 libxdmcp6 libx11-data
          libudev1 libbsd0 libmd0 ocl-icd-libopencl1)
prefix=/tmp/simrun-deps

case "${1:-}" in
  fetch)
    set -euo pipefail
    cd "$(dirname "${BASH_SOURCE[0]}")/.."
    mkdir -p .gpu-deps
    (cd .gpu-deps && apt-get download "${packages[@]}")
    echo "gpu_deps: $(ls .gpu-deps/*.deb | wc -l) packages, $(du -sh .gpu-deps | cut -f1) in .gpu-deps/"
    ;;
  unpack)
    if ! ls .gpu-deps/*.deb > /dev/null 2>&1; then
      echo "gpu_deps: no .gpu-deps/*.deb here (run exec/gpu_deps.sh fetch, and carry .gpu-deps)"
    else
      mkdir -p "$prefix"
      for f in .gpu-deps/*.deb; do dpkg -x "$f" "$prefix"; done
      lib="$prefix/usr/lib/x86_64-linux-gnu"
      export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
      export CPATH="$prefix/usr/include${CPATH:+:$CPATH}"
      export LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
      export LD_LIBRARY_PATH="$lib:$lib/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      export PATH="$prefix/usr/bin:$PATH"
      # Debian's alternatives (/etc/alternatives) are not there: name Open MPI's own files.
      ln -sf mpic++.openmpi "$prefix/usr/bin/mpicxx"
      ln -sf mpirun.openmpi "$prefix/usr/bin/mpirun"
      ln -sf openmpi/lib/libmpi.so "$lib/libmpi.so"
      ln -sf openmpi/lib/libmpi_cxx.so "$lib/libmpi_cxx.so"
      export MPI_CXX_COMPILER="$prefix/usr/bin/mpic++.openmpi" MPIEXEC_EXECUTABLE="$prefix/usr/bin/mpirun.openmpi"
      # Open MPI relocated: its wrappers, help files and components under the prefix.
      export OPAL_PREFIX="$prefix/usr"
      export OPAL_LIBDIR="$lib/openmpi/lib"
      export OMPI_MCA_mca_base_component_path="$lib/openmpi/lib/openmpi3"
      echo "gpu_deps: $(ls .gpu-deps/*.deb | wc -l) packages unpacked under $prefix"
    fi
    ;;
  *)
    echo "usage: exec/gpu_deps.sh fetch | source exec/gpu_deps.sh unpack" >&2
    return 2 2> /dev/null || exit 2
    ;;
esac
