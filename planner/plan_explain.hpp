#pragma once
// What `micsim plan` says about its result in words: a candidate's one-line description, why the
// winner won (its step's make-up, its largest collective, the best of each other strategy, 3-D vs
// MiCS, the neighbouring partition sizes), the smallest partition group that fits, and, when nothing
// is ranked, what came closest and which knob to turn.
#include <string>
#include <vector>

#include "planner/plan.hpp"

namespace micsim {

// "16 x p4d.24xlarge mics p=8 hierarchical, micro-batch 8, checkpointing"
std::string describe(const Scenario& sc);

// The ranked winner (res.ranking.front()) against the rest of the search.
std::string explain_winner(const PlanResult& res);

// Nothing fits in GPU memory: the candidate that came closest and what it would take.
std::string explain_nothing_fits(const std::vector<Evaluation>& evals);

// Nothing met the deadline or the budget: the candidate that came closest, and by how much.
std::string explain_nearest_miss(const PlanSpec& spec, const std::vector<PlanRow>& missed);

// Per searched instance and sharded strategy (mics, hsdp): the smallest partition group among the ranked rows.
std::vector<std::string> smallest_fitting(const PlanResult& res, bool inline_instance);

}  // namespace micsim
