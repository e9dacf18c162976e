// The framework profile of a measured-runs row (measured_runs.cpp): the one thing the mapping
// decides per row; each profile's fields cite the framework code or docs they follow.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simrun/sim/framework/profile.hpp"

namespace simrun {

// The profile id (or id@version) of `row`, for FrameworkCatalog::resolve. A row's own "framework"
// field wins: a profile id or alias as written, case aside ("DeepSpeed@0.5", "megatron-ds"), else
// the framework its text names ("PyTorch FSDP", "NeMo 24.07"), else as written (resolve refuses
// it, and the run says why); else the shipped groups' sources; else the framework its group and
// source name (a team's own file, other published runs); else Megatron-Core. `architecture`: the
// row's GPU's (GpuSpec::architecture), "" when the GPU is not in the catalog.
std::string measured_run_framework(const nlohmann::json& row, const std::string& architecture,
                                   const FrameworkCatalog& frameworks);

}  // namespace simrun
