#pragma once
// How fast each simulated node computes in each micro-step of the SimGrid engine: a slow node
// (what_if.slow_node), stragglers' expected stalls, and sampled jitter.
//
// Jitter is drawn per node and per micro-step: a node runs at the pace of its slowest GPU, whose compute
// takes 1 + cv·z longer (z standard normal, a fixed seed unless what_if.jitter_seed), and a new draw
// is made every micro-step. That is the analytic engine's transient noise (models/compute/jitter.hpp,
// docs/model.md sec 2.6): a partition group that meets the others only at the step's end averages its
// noise over its micro-steps, and the step waits for the group whose micro-steps added up slowest.
// (Until 2026-12-05 one draw per node lasted the whole step, which made a MiCS group's slowest node slow
// in every micro-step: 3 % more wait than the analytic engine on the MiCS headline.)
//
// The task graph holds only the first, a few middle and the last micro-step (the middle ones stand for
// all the others), and a quotient run simulates one block of nodes for the whole cluster. So:
//   - a built middle micro-step gets each node's mean over every middle micro-step of the step (sampled;
//     beyond a budget of draws, over a sample of them), shifted so that the nodes of a sync group meet
//     at the group's mean per-micro-step maximum, not at the smaller maximum of their means;
//   - where a sync group reaches beyond the simulated block, the block's nodes are shifted so that its
//     slowest node runs at the group's slowest pace (the copies outside the block are not simulated);
//   - the block simulated is the copy holding the group whose step adds up slowest, and in it the node
//     whose own micro-steps add up slowest.
// Sync groups are the nodes joined by the groups a micro-step meets (PreparedSimulation::sync_kinds:
// partition groups for MiCS between its per-step all-reduces, the world for ZeRO-3, tensor groups and
// pipeline pairs for Megatron-LM), at node granularity (a node's GPUs share one pace), so groups
// smaller than a node take the node's slowest GPU.
#include <vector>

#include "sim/simulation.hpp"

namespace micsim::des {

struct ComputePace {
  int block_offset = 0;                     // first cluster node of the simulated block
  std::vector<std::vector<double>> factor;  // [simulated node][built micro-step]: compute time multiplier
  double at(int node, int micro_step) const;
};

// The nodes that meet within a micro-step: joined by any group of the kinds it meets
// (PreparedSimulation::sync_kinds, the collectives' groups, as the analytic engine counts their ranks),
// as connected components; per node its component, numbered 0.. in order of the first node.
std::vector<int> sync_groups(const PreparedSimulation& p, int nodes);

// `world_nodes` in the cluster, `block_nodes` simulated (== world_nodes without symmetry), a divisor.
ComputePace sample_compute_pace(const PreparedSimulation& p, int world_nodes, int block_nodes);

}  // namespace micsim::des
