// The vocabulary of communication: the collective operations a training step issues and the
// networks they ride. The workload describes them (workload.hpp), the collectives time them
// (collective_tuner.hpp, collective_cost.hpp), slow links and calibration name the link class.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simrun {

enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv };

const char* to_string(CollectiveOp op);  // "all_reduce" (nccl-tests binary names)
// As NCCL's kernels spell them, for trace events (ncclDevKernel_AllReduce_...).
const char* collective_name(CollectiveOp op);
// Case-insensitive, '_' and '-' ignored ("allreduce", "all-reduce", "bcast"); nullopt when unknown.
std::optional<CollectiveOp> parse_collective_op(std::string_view name);
std::vector<std::string> collective_op_names();

// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): busbw = algbw · factor, and a ring moves
// factor · S bytes through each rank's link: all_reduce 2(n−1)/n, all_gather, reduce_scatter and
// all_to_all (n−1)/n, broadcast, reduce and send/recv 1 (one rank: 0 for the first four).
double busbw_factor(CollectiveOp op, int64_t n);

// Which network a group's traffic rides: the scale-up domain (NVLink / Infinity Fabric) or
// the NICs of the inter-node fabric. Shared with calibration.json's per-link α/β.
enum class LinkClass { scale_up, scale_out };

}  // namespace simrun
