#pragma once
// The flow decomposition of a collective, for the SimGrid engine: what each node of the group sends,
// on which tier, to whom. One description (the estimate of the collective library) gives both the
// analytic time and these flows: on idle links the flows end exactly when the analytic time says.
//
// Per node: one NVLink flow between two of its GPUs, carrying the per-GPU intra-node transfer (all
// GPUs of a node do the same, and NVSwitch ports are independent), and one flow per NIC link that the
// group's GPUs on the node use, to the next node of the group's ring, carrying the inter-node transfer.
// Flow sizes are "wire bytes": the tier's transfer time x the link's nominal rate, so that protocol
// overheads and efficiencies occupy the link as they do on the wire; contention stretches them.
#include <vector>

#include "models/collective/collective.hpp"

namespace micsim {

struct FlowSpec {
  Tier tier = Tier::Intra;
  int src_node = 0, src_gpu = 0;
  int dst_node = 0, dst_gpu = 0;
  double bytes = 0;
};

struct FlowContext {
  int gpus_per_node = 8;
  int nic_links = 1;                 // NIC links per node (see ClusterTopology)
  double nvlink_bytes_per_s = 0;     // nominal per-GPU NVLink rate
  double nic_link_bytes_per_s = 0;   // nominal rate of one NIC link
};

// Flows sent by `node`, one member of a collective whose nodes are `ring` (in ring order).
std::vector<FlowSpec> collective_flows(const CollectiveEstimate& est, const FlowContext& ctx, int node,
                                       const std::vector<int>& ring);

}  // namespace micsim
