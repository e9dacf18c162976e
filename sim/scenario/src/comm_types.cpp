// Names of the collective operations (comm_types.hpp).
#include "simrun/sim/scenario/comm_types.hpp"

#include "simrun/common/text.hpp"

namespace simrun {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return "all_reduce";
    case CollectiveOp::all_gather:
      return "all_gather";
    case CollectiveOp::reduce_scatter:
      return "reduce_scatter";
    case CollectiveOp::broadcast:
      return "broadcast";
    case CollectiveOp::reduce:
      return "reduce";
    case CollectiveOp::all_to_all:
      return "alltoall";
    case CollectiveOp::send_recv:
      return "sendrecv";
  }
  return "?";
}

const char* collective_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return "AllReduce";
    case CollectiveOp::all_gather:
      return "AllGather";
    case CollectiveOp::reduce_scatter:
      return "ReduceScatter";
    case CollectiveOp::all_to_all:
      return "AllToAll";
    case CollectiveOp::send_recv:
      return "SendRecv";
    case CollectiveOp::broadcast:
      return "Broadcast";
    case CollectiveOp::reduce:
      return "Reduce";
  }
  return "?";
}

std::optional<CollectiveOp> parse_collective_op(std::string_view name) {
  const std::string n = spelling_key(name);
  if (n == "allreduce") return CollectiveOp::all_reduce;
  if (n == "allgather") return CollectiveOp::all_gather;
  if (n == "reducescatter") return CollectiveOp::reduce_scatter;
  if (n == "broadcast" || n == "bcast") return CollectiveOp::broadcast;
  if (n == "reduce") return CollectiveOp::reduce;
  if (n == "alltoall") return CollectiveOp::all_to_all;
  if (n == "sendrecv") return CollectiveOp::send_recv;
  return std::nullopt;
}

std::vector<std::string> collective_op_names() {
  return {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"};
}

double busbw_factor(CollectiveOp op, int64_t n) {
  if (n <= 1)
    return op == CollectiveOp::broadcast || op == CollectiveOp::reduce || op == CollectiveOp::send_recv ? 1.0
                                                                                                        : 0.0;
  switch (op) {
    case CollectiveOp::all_reduce:
      return 2.0 * double(n - 1) / double(n);
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all:
      return double(n - 1) / double(n);
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::send_recv:
      return 1.0;
  }
  return 1.0;
}

}  // namespace simrun
