#pragma once
// The SimGrid engine: the same task graph as the analytic engine, run for every node of the cluster
// on a SimGrid platform built from the topology, so that contention emerges: groups sharing a node's
// NICs, oversubscribed leaf uplinks, a degraded link, a straggling node. A cluster that repeats
// itself every B nodes runs as one block of B nodes instead (sim/des/symmetry.hpp).
//
// Each node runs one actor per stream (compute, gather, reduce) over the per-rank task graph (all
// GPUs of a node behave alike). A collective starts when the last node of its group reaches it; it
// then waits its latency (by formula) and runs the flows of its decomposition (models/collective/
// flows); every member continues when the last flow ends. Compute runs as an Exec on the node's
// compute host, which slows down (second pstate) while a collective is active on the node.
#include <functional>
#include <string>
#include <vector>

#include "models/hardware/topology.hpp"
#include "sim/simulation.hpp"

namespace micsim::des {

struct DesOptions {
  bool keep_all_timelines = false;  // per-task times of every node (for traces); else the critical node only
  bool use_symmetry = true;         // simulate one block of a translation-symmetric cluster (sim/des/symmetry.hpp)
};

struct DesOutcome {
  StepTimeline critical;            // the node that finished last (its breakdown is the step's)
  int critical_node = 0;             // in the cluster (a quotient run: the slowest node of the critical node's orbit)
  int simulated_nodes = 0;           // nodes the engine ran: the cluster's, or the block of a symmetric one
  std::vector<StepTimeline> nodes;  // every node, when keep_all_timelines
  double wall_s = 0;                // host time spent simulating
  long peak_rss_kib = 0;            // of the simulating process
  size_t flows = 0;                 // network activities created
  size_t events = 0;                // activities the engine resolved: flows, compute, waits
};

// Runs in the calling process: SimGrid allows one engine per process, so use run_isolated().
DesOutcome run_simgrid(const PreparedSimulation& p, const DesOptions& opt);

// Forks a child that runs the simulation and sends back the outcome (the parent never instantiates
// SimGrid, so any number of runs, one after another or in parallel, are possible).
DesOutcome run_isolated(const PreparedSimulation& p, const DesOptions& opt);

// Several simulations, up to `parallel` child processes at once (call from one thread only).
// `on_done(i)` is called as soon as simulation i finishes (its outcome is then in the result vector's
// slot i): progress reporting, and saving each result as it comes. `heartbeat`, if given, is called
// about every 20 ms while the children run (progress lines without a thread of their own).
std::vector<DesOutcome> run_isolated_many(const std::vector<const PreparedSimulation*>& sims, int parallel,
                                          const std::function<void(size_t, const DesOutcome&)>& on_done = {},
                                          const std::function<void()>& heartbeat = {});

// A sweep of collectives (as `micsim collective --engine simgrid` runs them): one after another on an
// idle cluster of `nodes` x `gpus_per_node` GPUs; returns the simulated time of each.
std::vector<double> simgrid_collective_times(const InstanceSpec& inst, int nodes, int gpus_per_node,
                                             const NetworkParams& net, const std::vector<CollectiveEstimate>& calls);

}  // namespace micsim::des
