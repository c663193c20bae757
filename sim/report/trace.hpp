#pragma once
// Chrome / Perfetto trace of a simulated step (opens in ui.perfetto.dev or chrome://tracing):
// one process per node, one track per GPU stream (compute, gather, reduce), one named event per layer
// operation and collective, with bytes, group, algorithm and protocol in its arguments.
#include <string>
#include <vector>

#include "sim/simulation.hpp"

namespace micsim {

struct TracedNode {
  int node = 0;
  const StepTimeline* timeline = nullptr;
};

std::string chrome_trace(const PreparedSimulation& p, const std::vector<TracedNode>& nodes, const std::string& engine);

}  // namespace micsim
