// validate's microbenchmark of the host under MPI (exec/, private; host_device.hpp says what it
// measures and how the figures describe the host).
#pragma once

#include "mpi_world.hpp"
#include "simrun/exec/host_device.hpp"

namespace simrun::exec {

// Every rank runs it at once, as the step will; medians over the ranks, the same on every rank.
HostMeasurement measure_host(const World& w);

}  // namespace simrun::exec
