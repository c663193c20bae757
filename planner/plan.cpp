#include "planner/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "models/hardware/prices.hpp"
#include "models/io/input_error.hpp"
#include "models/io/input_file.hpp"
#include "planner/candidates.hpp"
#include "planner/plan_checkpoint.hpp"
#include "planner/plan_explain.hpp"
#include "planner/ranks.hpp"

// run_plan: the search's stages in order. Enumerating the candidates is planner/candidates.cpp, what the
// result says in words planner/plan_explain.cpp, its text / CSV / JSON planner/plan_output.cpp.
namespace micsim {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Groups pruning reasons: "expected a multiple of ... = 8 x 128 = 1024, got 512" -> its text before the numbers.
std::string reason_category(const std::string& key, const std::string& detail) {
  std::string d = detail.substr(0, detail.find(", got"));
  size_t eq = d.find(" = ");
  if (eq != std::string::npos) d = d.substr(0, eq);
  size_t paren = d.find(" (");
  if (paren != std::string::npos) d = d.substr(0, paren);
  return key.empty() ? d : key + ": " + d;
}

// The key of a search: a checkpoint written for another search (or by another micsim) is not reused.
std::string plan_key(const std::string& text, const std::vector<std::string>& overrides, const std::vector<Variant>& variants) {
  std::string all = std::string("micsim ") + MICSIM_VERSION + "\x1d" + text;
  for (const auto& o : overrides) all += "\x1f" + o;
  for (const auto& v : variants) {
    all += "\x1d";
    for (const auto& o : v.overrides) all += "\x1e" + o;
  }
  return fmt::format("{:016x}", fnv1a64(all));
}

struct Price {
  double usd_per_hour = 0;  // whole cluster
  std::string source;
};

// The cluster's price: the user's override, the scenario's own instance entry, or the price book's quote
// in the plan's tier.
std::optional<Price> price_of(const PlanSpec& spec, const Scenario& sc) {
  const std::string& name = sc.cluster.instance.name;
  const int n = sc.cluster.nodes;
  if (auto it = spec.prices.find(name); it != spec.prices.end())
    return Price{it->second * n, fmt::format("{} ${}/h ({})", name, it->second, spec.price_origin.count(name) ? spec.price_origin.at(name) : "override")};
  if (sc.cluster.instance.price_explicit && sc.cluster.instance.price_usd_per_hour)
    return Price{*sc.cluster.instance.price_usd_per_hour * n, fmt::format("{} ${}/h (instance entry)", name, *sc.cluster.instance.price_usd_per_hour)};
  if (auto q = PriceBook::builtin().quote(name, spec.price_tier))
    return Price{q->usd_per_hour * n, fmt::format("{} ${}/h: {}", name, q->usd_per_hour, q->describe())};
  return std::nullopt;
}

// Stage 3: the rankable candidates. Invalid ones, those that do not fit (kept aside for plots), those over
// the hourly budget and, for a cost objective or budget, those without a price are counted as pruned.
void keep_rankable(PlanResult& res) {
  const PlanSpec& spec = res.spec;
  const bool needs_price = spec.objective == Objective::Cost || spec.objective == Objective::CostWithinDeadline || spec.max_usd > 0;
  for (size_t i = 0; i < res.evaluations.size(); ++i) {
    const Evaluation& e = res.evaluations[i];
    if (!e.valid) {
      res.pruned[reason_category(e.reason_key, e.reason)] += 1;
      continue;
    }
    const std::optional<Price> price = price_of(spec, *e.scenario);
    PlanRow row;
    row.index = i;
    row.eval = &e;
    row.has_price = price.has_value();
    row.price_usd_per_hour = price ? price->usd_per_hour : 0;
    if (!e.analytic.memory.fits) {
      res.pruned["does not fit in GPU memory"] += 1;
      row.tokens_per_s = e.analytic.tokens_per_s;
      res.not_fitting.push_back(row);
      continue;
    }
    if (spec.max_usd_per_hour > 0 && price && price->usd_per_hour > spec.max_usd_per_hour) {
      res.pruned["over plan.max_usd_per_hour"] += 1;
      continue;
    }
    if (needs_price && !price) {
      res.pruned[fmt::format("no {} price (give one with --price INSTANCE=USD)", spec.price_tier)] += 1;
      continue;
    }
    row.price_source = price ? price->source : "";
    res.ranking.push_back(row);
  }
}

// A row's figures and objective (lower is better) from one engine's result.
void score(const PlanSpec& spec, PlanRow& row, const SimulationResult& r) {
  row.tokens_per_s = r.tokens_per_s;
  row.hours_for_target = spec.target_tokens > 0 ? spec.target_tokens / r.tokens_per_s / 3600.0 : 0;
  row.usd_for_target = row.hours_for_target * row.price_usd_per_hour;
  switch (spec.objective) {
    case Objective::Throughput: row.objective = -r.tokens_per_s; break;
    case Objective::Time: row.objective = 1.0 / r.tokens_per_s; break;
    case Objective::Cost:
    case Objective::CostWithinDeadline: row.objective = row.price_usd_per_hour / r.tokens_per_s; break;
  }
}

bool by_objective(const PlanRow& a, const PlanRow& b) { return a.objective != b.objective ? a.objective < b.objective : a.index < b.index; }

// The deadline and the total budget, on the engine that scored the first `to` rows: rows over a limit leave
// the ranking, counted as pruned, and go to `missed` (the nearest miss explains an empty ranking).
void apply_limits(PlanResult& res, size_t to, const char* engine, std::vector<PlanRow>& missed) {
  const PlanSpec& spec = res.spec;
  std::vector<PlanRow>& rows = res.ranking;
  std::vector<PlanRow> kept;
  for (size_t i = 0; i < to; ++i) {
    const PlanRow& row = rows[i];
    double ratio = 0;
    std::string why;
    if (spec.max_days > 0 && row.hours_for_target / 24 > spec.max_days)
      ratio = row.hours_for_target / 24 / spec.max_days, why = "misses the deadline (max_days)";
    if (spec.max_usd > 0 && row.usd_for_target > spec.max_usd && row.usd_for_target / spec.max_usd > ratio)
      ratio = row.usd_for_target / spec.max_usd, why = "over the budget for the target (max_usd)";
    if (why.empty()) {
      kept.push_back(row);
      continue;
    }
    res.pruned[fmt::format("{} ({})", why, engine)] += 1;
    missed.push_back(row);
  }
  kept.insert(kept.end(), rows.begin() + long(to), rows.end());
  rows = std::move(kept);
}

// Stage 4: re-simulate the top K with the SimGrid engine (refinements saved by an earlier run of the
// same search are taken from the checkpoint), then rank those K by what it says.
void refine_top(PlanResult& res, const std::string& plan_id, std::vector<PlanRow>& missed) {
  const PlanSpec& spec = res.spec;
  const size_t k = std::min<size_t>(spec.refine, res.ranking.size());
  if (k == 0) return;
  const auto t1 = std::chrono::steady_clock::now();
  PlanCheckpoint ck(spec.checkpoint, plan_id);
  // Rank 0 reads (and may repair) the checkpoint; the other ranks receive what it holds.
  std::map<size_t, SimulationResult> saved;
  if (ranks::is_root()) saved = ck.load(res.evaluations.size());
  if (ranks::size() > 1) {
    std::map<size_t, const SimulationResult*> held;
    for (const auto& [i, r] : saved) held[i] = &r;
    saved = all_gather_results(res.evaluations.size(), held);
  }
  std::vector<Evaluation*> todo;
  std::vector<size_t> todo_index;
  for (size_t i = 0; i < k; ++i) {
    const size_t idx = res.ranking[i].index;
    Evaluation& e = res.evaluations[idx];
    auto it = saved.find(idx);
    if (it == saved.end()) {
      todo.push_back(&e);
      todo_index.push_back(idx);
      continue;
    }
    // A saved refinement must be of this candidate (same cluster shape and groups).
    if (it->second.world_size != e.analytic.world_size || it->second.partition_size != e.analytic.partition_size ||
        it->second.global_batch != e.analytic.global_batch)
      throw InputError({spec.checkpoint, 0, 0}, "", fmt::format("the record of candidate {} does not match it; delete the file to start afresh", idx));
    e.simgrid = it->second;
  }
  const bool stopping = spec.stop_after > 0 && todo.size() > spec.stop_after;
  if (stopping) todo.resize(spec.stop_after), todo_index.resize(spec.stop_after);
  refine_with_simgrid(todo, spec.threads > 0 ? spec.threads : default_threads(), spec.progress ? "plan: simgrid" : "",
                      [&](size_t i) {
                        if (ranks::is_root()) ck.append(todo_index[i], *todo[i]->simgrid);  // one writer
                      });
  if (stopping)
    throw PlanStopped(fmt::format("stopped after {} new SimGrid refinement(s) ({} of the top {} done); run again with --checkpoint {} "
                                  "to resume",
                                  todo.size(), saved.size() + todo.size(), k, spec.checkpoint));
  for (size_t i = 0; i < k; ++i) {
    res.ranking[i].refined = true;
    score(spec, res.ranking[i], *res.ranking[i].eval->simgrid);
  }
  std::sort(res.ranking.begin(), res.ranking.begin() + long(k), by_objective);
  apply_limits(res, k, "SimGrid", missed);
  res.simgrid_wall_s = seconds_since(t1);
}

// Stage 5: the Pareto front, more tokens/s for fewer dollars per token, among the priced rows.
void mark_pareto(PlanResult& res) {
  std::vector<size_t> order;
  for (size_t i = 0; i < res.ranking.size(); ++i)
    if (res.ranking[i].has_price) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = res.ranking[a], &y = res.ranking[b];
    return x.tokens_per_s != y.tokens_per_s ? x.tokens_per_s > y.tokens_per_s : x.index < y.index;
  });
  double best_cost = 1e300;
  for (size_t i : order) {
    const double cost = res.ranking[i].price_usd_per_hour / res.ranking[i].tokens_per_s;
    if (cost < best_cost - 1e-15) {
      best_cost = cost;
      res.ranking[i].pareto = true;
      res.pareto.push_back(i);
    }
  }
}

}  // namespace

PlanResult run_plan(const std::string& path, const std::vector<std::string>& base_overrides, const PlanSpec& spec_in) {
  PlanResult res;
  res.spec = spec_in;
  check_plan_spec(res.spec, [&](const std::string& key, const std::string& why) { throw InputError({path, 0, 0}, "plan." + key, why); });
  const std::string text = read_whole_file(path);
  const Scenario base = parse_scenario_text(text, path, base_overrides);

  // 1. Enumerate (the spec's empty lists are filled in from the scenario).
  CandidateSpace space = enumerate_candidates(path, base, base_overrides, res.spec);
  res.pruned = space.pruned;
  res.candidates = space.variants.size();
  for (const auto& [reason, n] : space.pruned) res.candidates += n;

  // 2. Evaluate every candidate with the analytic engine (all cores). Results come back in candidate
  //    order whatever the thread timing.
  const auto t0 = std::chrono::steady_clock::now();
  EvaluateOptions eo;
  eo.threads = res.spec.threads;
  eo.simulate_non_fitting = true;  // their rate is drawn (as not fitting) by scripts/plot
  if (res.spec.progress) eo.progress_label = "plan: analytic";
  res.evaluations = evaluate_variants(text, path, space.variants, eo);
  res.analytic_wall_s = seconds_since(t0);
  res.evaluated = res.evaluations.size();

  // 3. Rank by the analytic engine alone (the top K are then a pure function of the inputs, whatever a
  //    checkpoint already holds), within the deadline and budget.
  keep_rankable(res);
  for (auto& row : res.ranking) score(res.spec, row, row.eval->analytic);
  std::sort(res.ranking.begin(), res.ranking.end(), by_objective);
  std::vector<PlanRow> missed;
  apply_limits(res, res.ranking.size(), "analytic", missed);

  // 4. Re-rank the top K by the SimGrid engine.
  refine_top(res, plan_key(text, base_overrides, space.variants), missed);

  // 5. Pareto front; 6. the smallest partition group that fits.
  mark_pareto(res);
  res.smallest_fitting = smallest_fitting(res, space.inline_instance);

  // 7. Explain the winner and write its hand-offs; with no winner, explain the nearest miss.
  if (res.ranking.empty()) {
    res.explanation = !missed.empty() ? explain_nearest_miss(res.spec, missed) : explain_nothing_fits(res.evaluations);
    return res;
  }
  res.explanation = explain_winner(res);
  const PlanRow& w = res.ranking.front();
  res.handoffs = all_handoffs(*w.eval->scenario, w.eval->best());
  return res;
}

}  // namespace micsim
