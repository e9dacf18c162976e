// The report as JSON: DESIGN.md's contract keys (SI units) plus the extras — fidelity, FLOP
// convention, hardware FLOPs, the full breakdown, the workspace allowance, the checkpoint
// interval and, when present, the explanations of --explain. Byte counts are JSON integers.
#include "simrun/sim/report/report.hpp"

#include "simrun/sim/report/csv.hpp"

namespace simrun {

nlohmann::json to_json(const BreakdownReport& b) {
  return {
      {"compute_s", b.compute_s},       {"exposed_comm_s", b.exposed_comm_s},
      {"bubble_s", b.bubble_s},         {"forward_s", b.forward_s},
      {"backward_s", b.backward_s},     {"recompute_s", b.recompute_s},
      {"optimizer_s", b.optimizer_s},   {"tp_comm_s", b.tp_comm_s},
      {"pp_comm_s", b.pp_comm_s},       {"dp_comm_s", b.dp_comm_s},
      {"cp_comm_s", b.cp_comm_s},       {"ep_comm_s", b.ep_comm_s},
      {"tp_exposed_s", b.tp_exposed_s}, {"pp_exposed_s", b.pp_exposed_s},
      {"dp_exposed_s", b.dp_exposed_s}, {"cp_exposed_s", b.cp_exposed_s},
      {"ep_exposed_s", b.ep_exposed_s}, {"stage", b.stage},
  };
}

nlohmann::json to_json(const Report& r) {
  nlohmann::json j;
  j["fidelity"] = r.fidelity;
  j["flop_convention"] = r.flop_convention;
  j["step_time_s"] = r.step_time_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["flops_per_step"] = r.flops_per_step;
  j["hardware_flops_per_step"] = r.hardware_flops_per_step;
  j["model"] = {{"params", r.params}, {"active_params", r.active_params}};
  j["memory"] = {
      {"peak_bytes_per_gpu", bytes_json(r.memory.peak_bytes_per_gpu)},
      {"capacity_bytes", bytes_json(r.memory.capacity_bytes)},
      {"fits", r.memory.fits},
      {"weights", bytes_json(r.memory.weights)},
      {"grads", bytes_json(r.memory.grads)},
      {"optimizer", bytes_json(r.memory.optimizer)},
      {"activations", bytes_json(r.memory.activations)},
      {"workspace", bytes_json(r.memory.workspace)},
  };
  j["breakdown"] = to_json(r.breakdown);
  j["degraded"] = r.degraded;
  j["run"] = {
      {"tokens", r.run.tokens},
      {"days", r.run.days},
      {"gpu_hours", r.run.gpu_hours},
      {"cost_usd", r.run.cost_usd},
      {"energy_kwh", r.run.energy_kwh},
      {"goodput", r.run.goodput},
      {"checkpoint_interval_s", r.run.checkpoint_interval_s},
  };
  j["warnings"] = r.warnings;
  if (!r.explanations.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const Explained& e : r.explanations)
      list.push_back({{"key", e.key},
                      {"value", e.value},
                      {"unit", e.unit},
                      {"formula", e.formula},
                      {"inputs", e.inputs}});
    j["explanations"] = std::move(list);
  }
  return j;
}

}  // namespace simrun
