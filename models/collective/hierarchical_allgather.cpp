// MiCS hierarchical all-gather (docs/reference/mics.md §5.3, DeepSpeed
// MiCS_Init._hierarchical_all_gather_params). A partition group of p = k·g ranks over k nodes
// gathers a tensor of S bytes (each rank holds S/p):
//   1. inter-node: g groups of k ranks (one per node, same local rank) each gather k shards: S/g bytes;
//      the g groups run at once and share the node's NICs, so each node sends (k-1)/k·S in total
//      instead of the flat ring's (p-1)/p·S;
//   2. re-arrangement: each GPU copies its S/g bytes into their strided places;
//   3. intra-node: k coalesced all-gathers of S/k bytes over the node's g GPUs.
#include <stdexcept>

#include "models/collective/collective.hpp"

namespace micsim {

HierarchicalAllGather estimate_hierarchical_allgather(const CollectiveModel& model, double bytes, int nodes,
                                                      int gpus_per_node, int partition_groups_per_node) {
  if (nodes < 2 || gpus_per_node < 1) throw std::invalid_argument("hierarchical all-gather needs >= 2 nodes");
  HierarchicalAllGather h;
  const int k = nodes, g = gpus_per_node;
  GroupLayout inter = GroupLayout::make(k, k, g * partition_groups_per_node);
  h.inter = model.estimate(CollectiveOp::AllGather, bytes / g, inter);
  h.copy_bytes = bytes / g;
  GroupLayout intra = GroupLayout::make(g, 1, 1);
  CollectiveEstimate sub = model.estimate(CollectiveOp::AllGather, bytes / k, intra);
  // k sub-all-gathers in one NCCL group call: k times the latency, the same total bytes.
  h.intra = sub;
  h.intra.bytes = bytes;
  h.intra.time_s = k * sub.time_s;
  h.intra.latency_s = k * sub.latency_s;
  h.intra.intra_bytes_per_gpu = k * sub.intra_bytes_per_gpu;
  return h;
}

}  // namespace micsim
