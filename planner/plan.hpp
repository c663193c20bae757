#pragma once
// micsim plan: "I have this model and this budget: what do I rent, and how do I configure MiCS?"
// Enumerate configurations (instance, nodes, tensor/pipeline/context parallel degrees and virtual
// stages, data-parallel strategy, partition size, hierarchical gather, micro-batch, checkpointing) with the global batch held fixed -> prune what is invalid or does not
// fit (counted, with reasons) -> rank with the analytic engine on every core -> re-simulate the top K
// with the SimGrid engine -> final ranking, Pareto front (throughput vs cost), an explanation of the
// winner and hand-off fragments for DeepSpeed and FSDP.
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "planner/evaluate.hpp"
#include "planner/handoff/handoff.hpp"

namespace micsim {

// throughput: most tokens/s; time: shortest time to the target; cost: cheapest target (per token:
// it favours the smallest cluster); cost-within-deadline: cheapest target among those done by max_days.
enum class Objective { Throughput, Time, Cost, CostWithinDeadline };
const char* objective_key(Objective o);                      // as written in plan.objective / --objective
std::optional<Objective> parse_objective(const std::string& s);

struct PlanSpec {
  std::vector<std::string> instances;          // default: the scenario's
  std::vector<int> nodes;                      // default: the scenario's
  std::vector<std::string> strategies;         // default: zero3, mics, hsdp, ddp (those the framework runs)
  std::vector<int> partition_sizes;            // default: every valid p
  std::vector<bool> hierarchical = {true};     // for mics groups spanning nodes
  std::vector<int> micro_batches;              // default: the scenario's
  std::vector<bool> checkpointing;             // default: the scenario's
  // Model parallelism (3-D plans): each combination is a candidate; default: the scenario's degrees.
  std::vector<int> tp, pp, cp, virtual_stages;
  Objective objective = Objective::Throughput;
  double target_tokens = 0;                    // time / cost objectives
  int max_nodes = 0;                           // 0 = no limit
  double max_usd_per_hour = 0;                 // 0 = no limit
  double max_days = 0;                         // deadline for the target tokens (0 = none)
  double max_usd = 0;                          // budget for the target tokens, whole cluster (0 = none)
  std::string price_tier = "on_demand";        // which quote of the price book (models/catalog/prices.yaml)
  std::map<std::string, double> prices;        // $/h per instance, overriding the price book
  std::map<std::string, std::string> price_origin;  // where each override came from (--price, plan.prices)
  int top = 10;                                // rows shown
  int refine = 20;                             // top K re-simulated with SimGrid (0 = none)
  int threads = 0;
  bool progress = true;
  std::string checkpoint;          // resume file: evaluated candidates are saved as the search runs
  size_t stop_after = 0;           // evaluate at most this many new candidates, then stop (resumable)
};

// Thrown when a plan stops before its end (stop_after); the checkpoint holds what was done.
struct PlanStopped : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Consistency of a search (objective vs target tokens, deadline, budget): calls fail(key, why).
void check_plan_spec(const PlanSpec& s, const std::function<void(const std::string& key, const std::string& why)>& fail);

// Reads the scenario's `plan:` block (validated like the rest of the scenario).
PlanSpec read_plan_block(const std::string& scenario_path, const std::string& scenario_text,
                         const std::vector<std::string>& sets = {});

struct PlanRow {
  size_t index = 0;                 // enumeration order (ties)
  const Evaluation* eval = nullptr;
  double price_usd_per_hour = 0;    // cluster, 0 if unknown
  bool has_price = false;
  std::string price_source;         // the quote used, or the override
  double objective = 0;             // lower is better (throughput is negated)
  double tokens_per_s = 0;
  double hours_for_target = 0, usd_for_target = 0;
  bool refined = false;
  bool pareto = false;
};

struct PlanResult {
  PlanSpec spec;
  size_t candidates = 0, evaluated = 0;
  std::map<std::string, size_t> pruned;        // reason -> count
  std::vector<Evaluation> evaluations;
  std::vector<PlanRow> ranking;                // fitting candidates, best first
  std::vector<PlanRow> not_fitting;            // valid candidates that do not fit in GPU memory (for plots)
  std::vector<size_t> pareto;                  // indices into ranking
  std::string explanation;                     // for the winner (or, when nothing is ranked, the nearest miss)
  std::vector<std::string> smallest_fitting;   // per instance / strategy: the smallest p that fits
  std::vector<HandoffFile> handoffs;           // for the winner: ds_config.json, train_fsdp2.py, ... HANDOFF.md
  double analytic_wall_s = 0, simgrid_wall_s = 0;
};

PlanResult run_plan(const std::string& scenario_path, const std::vector<std::string>& base_overrides, const PlanSpec& spec);

std::string format_plan(const PlanResult& r);
// How many top ranks (the winner included) are within micsim's error of the winner: see plan_output.cpp.
size_t ranks_within_error(const PlanResult& r);
std::string plan_csv(const PlanResult& r);
nlohmann::json plan_json(const PlanResult& r);

}  // namespace micsim
