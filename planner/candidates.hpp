#pragma once
// The search space of `micsim plan`: the plan block's lists, completed from the scenario where the user
// left them empty, and their product as candidates (each a list of `--set` overrides of the scenario).
// Combinations that cannot be built are counted by reason, not enumerated.
#include <map>
#include <string>
#include <vector>

#include "planner/evaluate.hpp"
#include "planner/plan.hpp"

namespace micsim {

struct CandidateSpace {
  std::vector<Variant> variants;
  std::map<std::string, size_t> pruned;  // reason -> count, for combinations never built
  bool inline_instance = false;          // the scenario's own inline instance is the only one searched
};

// Fills the lists the user left empty from the base scenario (its instance, node count, micro-batch,
// checkpointing and model-parallel degrees; the strategies its framework runs), written back into
// `spec` because the plan reports what it searched; then every candidate, in a fixed order (instances,
// nodes, model-parallel shapes, strategies, partition sizes, hierarchical gather, micro-batches,
// checkpointing). Throws InputError (at `path`) when the product is larger than a search should be.
CandidateSpace enumerate_candidates(const std::string& path, const Scenario& base, const std::vector<std::string>& base_overrides,
                                    PlanSpec& spec);

}  // namespace micsim
