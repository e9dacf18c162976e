// Degraded GPUs and links: a GPU whose kernels run slower (a straggler) and a link below its line
// rate, as the event simulation applies them to single ranks and the estimate to their stages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simrun/sim/scenario/comm_types.hpp"
#include "simrun/sim/scenario/scenario.hpp"

namespace simrun {

// One GPU running slower than the rest (thermal throttling, a bad HBM stack, a noisy node).
struct Straggler {
  int64_t rank = 0;
  double slowdown = 1.0;  // compute ops take this many times longer, e.g. 1.3
};

// One GPU's link running below its line rate: its NIC share (a flapping link, a degraded cable,
// a congested leaf port) or its scale-up port (NVLinks down to fewer lanes or links after
// errors; on a full mesh, every link to its peers).
struct SlowLink {
  int64_t rank = 0;
  double bandwidth_fraction = 1.0;  // of the link's bandwidth, e.g. 0.25
  LinkClass link = LinkClass::scale_out;
};

// Throws InputError (input "step", field stragglers[i] / slow_links[i]) for a rank outside the cluster of
// `world_size` GPUs, a slowdown outside [1, 100] or a bandwidth fraction outside (0, 1].
void check_stragglers(const std::vector<Straggler>& stragglers, int64_t world_size);
void check_slow_links(const std::vector<SlowLink>& slow_links, int64_t world_size);

// The report's description of them (Report::degraded): ranks with the same slowdown or link
// fraction grouped into ranges, each named with its pipeline stage.
std::vector<std::string> describe_degraded(const Scenario& scenario, const std::vector<Straggler>& stragglers,
                                           const std::vector<SlowLink>& slow_links);

}  // namespace simrun
