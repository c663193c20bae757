#pragma once
// Where each collective's traffic crosses the fabric, for both engines: which nodes form the ring of a
// group, and, for the analytic engine, how much slower a collective's inter-node transfer runs when the
// rings of all concurrent group instances share oversubscribed leaf uplinks.
//
// Model (the same flows the SimGrid engine sends, models/collective/flows.hpp): every node of a group
// sends its inter-node transfer to the next node of its ring, one flow per NIC link its GPUs use, at
// the link's nominal rate. A flow whose next node sits on another leaf crosses its leaf's uplink (up)
// and the other leaf's (down). All instances of a group run the collective at once (SPMD). Links are
// shared max-min fairly, so with equal flows the slowest gets uplink capacity / flows on the most
// loaded uplink: the inter-node transfer stretches by max(1, max over uplinks of demand / capacity).
#include <vector>

#include "models/collective/collective.hpp"
#include "models/hardware/topology.hpp"
#include "sim/schedule/task_graph.hpp"
#include "sim/strategy/strategy.hpp"

namespace micsim {

struct ClusterSpec;

// The nodes of the group of kind g that `node` belongs to, in ring order.
std::vector<int> group_nodes(GroupKind g, const ParallelLayout& l, int node);

FabricLayout fabric_layout(const ClusterSpec& c);

// Factor >= 1 by which the inter-node transfer time of `est` (a collective of group kind g) stretches
// on the fabric: 1 when every ring stays under one leaf or the uplinks are not oversubscribed enough.
double uplink_slowdown(GroupKind g, const ParallelLayout& l, const FabricLayout& fabric, int nic_links,
                       const CollectiveEstimate& est);

}  // namespace micsim
