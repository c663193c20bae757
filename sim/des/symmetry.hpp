#pragma once
// Translation symmetry of a step, which lets the SimGrid engine simulate a block of nodes instead of
// the whole cluster (des_engine.cpp, "quotient" runs).
//
// Rule. Shift every node index by B (mod N). If the shift maps every group of every collective of the
// step onto a group of the same kind with the same ring order, maps leaves onto leaves with the same
// uplink rate, and nodes do not differ (no slow node, no jitter, no degraded link), then node n + B does exactly
// what node n does, at the same times (the max-min rates of a symmetric problem are symmetric, and
// they are unique). So nodes 0..B-1 are simulated and each stands for its orbit {n + kB}:
//   - a collective's rendezvous waits for the group's members inside the block (the others arrive
//     with their copies; requires every group to be closed under "mod B": its members mod B are its
//     members in the block);
//   - a flow to node m goes to m mod B, over the links the full route would use, taken by their
//     block representative: a link whose orbit has k copies in the cluster carries the flows of N/B
//     nodes' copies in k places, so its rate is scaled by k·B/N (1 when every copy lies outside the
//     block, B/N for a leaf uplink that every block shares, as with scattered placement).
// Nodes whose compute differs (jitter sampled per node and micro-step, on by default, or a `slow_node`)
// make the rule an approximation: the block simulated is the copy holding the cluster's slowest sync
// group, with that copy's factors (compute_pace.hpp), and all copies run in step. Copies that drift apart
// contend less on links they share; where they share an oversubscribed leaf uplink that is worth more
// than 1 %, and every node is simulated instead. Elsewhere the block is within 0.6 % of every node
// (tests/test_symmetry.cpp; GPT-175B MiCS p = 128: 0.0 to -0.46 % from 512 to 16,384 GPUs, MiCS p = 32
// on 16 nodes -0.59 %; a slow node at 1.5x: 0.0 to -0.23 %). A degraded link always means every node.
#include <vector>

#include "models/hardware/topology.hpp"
#include "sim/simulation.hpp"

namespace micsim::des {

struct NodeSymmetry {
  int period = 0;                     // B: nodes simulated; == nodes when there is no usable symmetry
  int nodes = 0;                      // N
  std::vector<double> uplink_scale;   // per leaf with block nodes: the factor k·B/N on its uplink's rate
  bool reduces() const { return period < nodes; }
};

// The smallest period B (a divisor of N) under which the step is invariant, as stated above.
NodeSymmetry find_node_symmetry(const PreparedSimulation& p, const ClusterTopology& topo);

}  // namespace micsim::des
