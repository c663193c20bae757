#include "planner/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "models/calibration/error_bands.hpp"
#include "models/io/csv.hpp"
#include "models/io/json_text.hpp"
#include "planner/plan_explain.hpp"
#include "sim/report/report.hpp"

// What `micsim plan` prints and writes: the ranking as text, CSV and JSON.
namespace micsim {

namespace {

const char* objective_name(Objective o) {
  switch (o) {
    case Objective::Throughput: return "throughput";
    case Objective::Time: return "time to train the target";
    case Objective::Cost: return "cost of the target";
    case Objective::CostWithinDeadline: return "cost of the target within the deadline";
  }
  return "?";
}

// The network notes of the first `rows` ranked candidates, once each: clusters larger than the measurements
// their fabric's terms rest on (or on a fabric whose terms are assumed), whose step times carry an error the
// published rows do not bound.
std::vector<std::string> network_notes(const PlanResult& r, size_t rows) {
  std::set<std::string> notes;
  for (size_t i = 0; i < r.ranking.size() && i < rows; ++i)
    if (const std::string& n = r.ranking[i].eval->best().network_note; !n.empty()) notes.insert(n);
  return {notes.begin(), notes.end()};
}

}  // namespace

// Candidates whose 90 % intervals overlap the winner's: their order is within micsim's error. On the
// same GPU both predictions carry their stack's bias alike, so only the spread inside one source (the
// band's rel_q05..rel_q95) separates them; across GPUs the whole bands do.
size_t ranks_within_error(const PlanResult& r) {
  if (r.ranking.empty()) return 0;
  auto interval = [](const Scenario& sc, const SimulationResult& res, bool relative) {
    if (!relative) return std::make_pair(res.tokens_per_s_low, res.tokens_per_s_high);
    const ErrorBand& b = ErrorBands::builtin().for_prediction(sc.cluster.instance.gpu.arch, is_sharded(sc.strategy.kind));
    return std::make_pair(res.tokens_per_s / (1 + b.rel_q95), res.tokens_per_s / (1 + b.rel_q05));
  };
  const Scenario& ws = *r.ranking.front().eval->scenario;
  const SimulationResult& w = r.ranking.front().eval->best();
  size_t within = 1;
  for (; within < r.ranking.size(); ++within) {
    const Scenario& cs = *r.ranking[within].eval->scenario;
    const bool same_gpu = cs.cluster.instance.gpu.name == ws.cluster.instance.gpu.name;
    if (interval(cs, r.ranking[within].eval->best(), same_gpu).second < interval(ws, w, same_gpu).first) break;
  }
  return within;
}

std::string format_plan(const PlanResult& r) {
  const PlanSpec& s = r.spec;
  std::string o;
  o += fmt::format("micsim plan: objective {}", objective_name(s.objective));
  if (s.target_tokens > 0) o += fmt::format(", target {:.3g} tokens", s.target_tokens);
  if (s.max_days > 0) o += fmt::format(", deadline {:g} days", s.max_days);
  if (s.max_usd > 0) o += fmt::format(", budget ${:.0f}", s.max_usd);
  o += fmt::format("\n  prices: {} tier (models/catalog/prices.yaml, newest quote)", s.price_tier);
  for (const auto& [inst, usd] : s.prices)
    o += fmt::format("; {} overridden to ${}/h ({})", inst, usd, s.price_origin.count(inst) ? s.price_origin.at(inst) : "override");
  o += "\n";
  size_t fitting = r.ranking.size();
  o += fmt::format("  searched {} configurations; {} ranked; pruned:\n", r.candidates, fitting);
  std::vector<std::pair<size_t, std::string>> pr;
  for (const auto& [reason, n] : r.pruned) pr.emplace_back(n, reason);
  std::sort(pr.begin(), pr.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (const auto& [n, reason] : pr) o += fmt::format("    {:>7}  {}\n", n, reason);
  if (pr.empty()) o += "    none\n";
  const bool target = s.target_tokens > 0;
  // A tp.pp.cp(v) column only when model-parallel candidates were searched.
  bool any_mp = false;
  for (const auto& row : r.ranking) any_mp |= !row.eval->scenario->parallelism.none();
  auto mp_cell = [&](const Scenario& sc) {
    if (!any_mp) return std::string();
    const ModelParallelism& m = sc.parallelism;
    return fmt::format(" {:<10}", fmt::format("{}.{}.{}{}", m.tp, m.pp, m.cp, m.virtual_stages > 1 ? fmt::format("v{}", m.virtual_stages) : ""));
  };
  o += fmt::format("\n {:>4} {:<22}{:>5}{:>6}", "rank", "instance", "nodes", "GPUs");
  if (any_mp) o += fmt::format(" {:<10}", "tp.pp.cp");
  o += fmt::format(" {:<7}{:>5} {:<5}{:>4}{:>5} {:<5}{:>10}{:>11}{:>8}{:>7}{:>10}{:>10}", "strategy", "p", "hier", "mb", "acc", "ckpt", "step", "samples/s", "TFLOPS", "MFU", "headroom",
                   "$/h");
  if (target) o += fmt::format("{:>10}{:>12}", "days", "$ target");
  o += "  engine\n";
  for (size_t i = 0; i < r.ranking.size() && int(i) < s.top; ++i) {
    const PlanRow& row = r.ranking[i];
    const Scenario& sc = *row.eval->scenario;
    const SimulationResult& res = row.eval->best();
    ParallelLayout l = make_layout(sc.strategy, sc.cluster.nodes, sc.cluster.instance.gpus_per_node, sc.parallelism);
    bool grouped = sc.strategy.kind == StrategyKind::MiCS || sc.strategy.kind == StrategyKind::HSDP || l.partition_size < l.dp;
    o += fmt::format(" {:>4} {:<22}{:>5}{:>6}", i + 1, sc.cluster.instance.name, sc.cluster.nodes, res.world_size) + mp_cell(sc);
    o += fmt::format(" {:<7}{:>5} {:<5}{:>4}{:>5} {:<5}{:>10}{:>11.1f}{:>8.1f}{:>6.1f}%{:>10}{:>10}", to_string(sc.strategy.kind),
                     grouped ? std::to_string(l.partition_size) : "-",
                     sc.strategy.kind == StrategyKind::MiCS && l.partition_group_nodes() > 1 ? (l.hierarchical ? "yes" : "no") : "-",
                     sc.training.micro_batch, res.grad_accumulation_steps, sc.training.activation_checkpointing() ? "yes" : "no",
                     human_seconds(res.iteration_time_s), res.samples_per_s, res.tflops_per_gpu, 100 * res.mfu,
                     human_bytes(res.memory.headroom_bytes()), row.has_price ? fmt::format("{:.0f}", row.price_usd_per_hour) : "-");
    if (target)
      o += fmt::format("{:>10.2f}{:>12}", row.hours_for_target / 24, row.has_price ? fmt::format("{:.0f}", row.usd_for_target) : "-");
    o += fmt::format("  {}{}\n", res.engine, row.pareto ? " *" : "");
  }
  if (r.ranking.size() >= 2) {
    const Scenario& ws = *r.ranking.front().eval->scenario;
    const SimulationResult& w = r.ranking.front().eval->best();
    const size_t within = ranks_within_error(r);
    const ErrorBand& wb = ErrorBands::builtin().for_prediction(ws.cluster.instance.gpu.arch, is_sharded(ws.strategy.kind));
    const std::string spread = fmt::format("{:+.0f}..{:+.0f} % from one run to another of the same stack, {:+.0f}..{:+.0f} % between "
                                           "stacks (held-out published runs)", 100 * wb.rel_q05, 100 * wb.rel_q95, 100 * wb.q05,
                                           100 * wb.q95);
    if (within > 1)
      o += fmt::format("\n  Ranks 1-{} are within micsim's error of each other ({}): measure before choosing between them.\n"
                       "  Winner's 90 % interval {:.0f}-{:.0f} tokens/s.\n", within, spread, w.tokens_per_s_low, w.tokens_per_s_high);
    else
      o += fmt::format("\n  The winner is clear of the runner-up beyond micsim's error ({}). Winner's 90 % interval {:.0f}-{:.0f} "
                       "tokens/s.\n", spread, w.tokens_per_s_low, w.tokens_per_s_high);
  }
  for (const auto& n : network_notes(r, size_t(s.top))) o += "\n  Note, " + n + "\n";
  if (!r.pareto.empty()) {
    o += "\n  Pareto front, throughput vs cost (* above):\n";
    for (size_t i : r.pareto) {
      const PlanRow& row = r.ranking[i];
      o += fmt::format("    {:>12.0f} tokens/s  ${:>9.2f} per million tokens  {}\n", row.tokens_per_s,
                       row.price_usd_per_hour / row.tokens_per_s / 3600 * 1e6, describe(*row.eval->scenario));
    }
  }
  if (!r.smallest_fitting.empty()) {
    o += "\n  Smallest partition group that fits:\n";
    for (const auto& l : r.smallest_fitting) o += "    " + l + "\n";
  }
  if (!r.explanation.empty()) o += (r.ranking.empty() ? "\n  " : "\n  Why the winner:\n  ") + r.explanation;
  if (!r.handoffs.empty()) {
    o += "\n  Hand-offs for the winner (--handoff-dir DIR writes them; HANDOFF.md says how to launch each):";
    for (const auto& f : r.handoffs) o += " " + f.name;
    o += "\n";
    for (const auto& f : r.handoffs)
      if (f.name == "ds_config.json") o += "\n  ds_config.json:\n" + f.text;
  }
  o += "\n  Sources: step times from the analytic engine, top ranks re-simulated with the SimGrid engine (column 'engine'); "
       "prices:\n";
  std::set<std::string> price_sources;
  for (size_t i = 0; i < r.ranking.size() && int(i) < s.top; ++i)
    if (r.ranking[i].has_price) price_sources.insert(r.ranking[i].price_source);
  for (const auto& ps : price_sources) o += "    " + ps + "\n";
  if (price_sources.empty()) o += "    none known for the rows shown (give one with --price INSTANCE=USD)\n";
  return o;
}

std::string plan_csv(const PlanResult& r) {
  std::string o = "rank,instance,nodes,gpus,strategy,partition_size,hierarchical,micro_batch,grad_accumulation_steps,"
                  "activation_checkpointing,iteration_time_s,samples_per_s,tokens_per_s,tflops_per_gpu,mfu,peak_bytes_per_gpu,"
                  "headroom_bytes,usd_per_hour,hours_for_target,usd_for_target,engine,pareto,price_source,tp,pp,cp,virtual_stages\n";
  for (size_t i = 0; i < r.ranking.size(); ++i) {
    const PlanRow& row = r.ranking[i];
    const Scenario& sc = *row.eval->scenario;
    const SimulationResult& res = row.eval->best();
    ParallelLayout l = make_layout(sc.strategy, sc.cluster.nodes, sc.cluster.instance.gpus_per_node, sc.parallelism);
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{},{},{},{},{},{},{},{}\n", i + 1,
                     sc.cluster.instance.name, sc.cluster.nodes, res.world_size, to_string(sc.strategy.kind), res.partition_size,
                     l.hierarchical ? "true" : "false", sc.training.micro_batch, res.grad_accumulation_steps,
                     sc.training.activation_checkpointing() ? "true" : "false", res.iteration_time_s, res.samples_per_s,
                     res.tokens_per_s, res.tflops_per_gpu, res.mfu, res.memory.peak_bytes, res.memory.headroom_bytes(),
                     row.has_price ? fmt::format("{:.6g}", row.price_usd_per_hour) : "",
                     row.hours_for_target > 0 ? fmt::format("{:.6g}", row.hours_for_target) : "",
                     row.has_price && row.hours_for_target > 0 ? fmt::format("{:.6g}", row.usd_for_target) : "", res.engine,
                     row.pareto ? "true" : "false", csv_field(row.price_source), sc.parallelism.tp, sc.parallelism.pp, sc.parallelism.cp,
                     sc.parallelism.virtual_stages);
  }
  return o;
}

nlohmann::json plan_json(const PlanResult& r) {
  using nlohmann::json;
  json j;
  j["objective"] = objective_key(r.spec.objective);
  j["target_tokens"] = r.spec.target_tokens > 0 ? json(r.spec.target_tokens) : json(nullptr);
  j["max_days"] = r.spec.max_days > 0 ? json(r.spec.max_days) : json(nullptr);
  j["max_usd"] = r.spec.max_usd > 0 ? json(r.spec.max_usd) : json(nullptr);
  j["price_tier"] = r.spec.price_tier;
  j["price_overrides"] = json::object();
  for (const auto& [inst, usd] : r.spec.prices)
    j["price_overrides"][inst] = {{"usd_per_hour", usd}, {"origin", r.spec.price_origin.count(inst) ? r.spec.price_origin.at(inst) : "override"}};
  j["candidates"] = r.candidates;
  j["ranked"] = r.ranking.size();
  j["pruned"] = r.pruned;
  json rows = json::array();
  for (size_t i = 0; i < r.ranking.size(); ++i) {
    const PlanRow& row = r.ranking[i];
    json x = to_json(row.eval->best());
    x.erase("sources");
    x.erase("warnings");
    x["rank"] = i + 1;
    x["activation_checkpointing"] = row.eval->scenario->training.activation_checkpointing();
    x["micro_batch"] = row.eval->scenario->training.micro_batch;
    x["hierarchical_allgather"] = make_layout(row.eval->scenario->strategy, row.eval->scenario->cluster.nodes,
                                              row.eval->scenario->cluster.instance.gpus_per_node, row.eval->scenario->parallelism).hierarchical;
    x["usd_per_hour"] = row.has_price ? json(row.price_usd_per_hour) : json(nullptr);
    // The simulation's cost block uses the plan's price (tier or override), not the catalog's.
    x["cost"] = row.has_price ? json{{"usd_per_hour", row.price_usd_per_hour},
                                     {"usd_per_step", row.price_usd_per_hour * row.eval->best().iteration_time_s / 3600.0}}
                              : json(nullptr);
    x["price_source"] = row.has_price ? json(row.price_source) : json(nullptr);
    x["hours_for_target"] = row.hours_for_target > 0 ? json(row.hours_for_target) : json(nullptr);
    x["usd_for_target"] = row.has_price && row.hours_for_target > 0 ? json(row.usd_for_target) : json(nullptr);
    x["pareto"] = row.pareto;
    x["overrides"] = row.eval->variant.overrides;
    rows.push_back(x);
  }
  j["ranking"] = rows;
  j["ranks_within_error"] = ranks_within_error(r);
  json misses = json::array();
  constexpr size_t kMaxMisses = 5000;  // enough to draw; the counts are in "pruned"
  for (size_t i = 0; i < r.not_fitting.size() && i < kMaxMisses; ++i) {
    const PlanRow& row = r.not_fitting[i];
    const Scenario& sc = *row.eval->scenario;
    const SimulationResult& a = row.eval->analytic;
    misses.push_back({{"instance", sc.cluster.instance.name},
                      {"nodes", sc.cluster.nodes},
                      {"world_size", a.world_size},
                      {"strategy", to_string(sc.strategy.kind)},
                      {"partition_size", a.partition_size},
                      {"micro_batch", sc.training.micro_batch},
                      {"activation_checkpointing", sc.training.activation_checkpointing()},
                      {"tokens_per_s", a.tokens_per_s},
                      {"usd_per_hour", row.has_price ? json(row.price_usd_per_hour) : json(nullptr)},
                      {"over_bytes", json_bytes(-a.memory.headroom_bytes())}});
  }
  j["does_not_fit"] = misses;
  j["smallest_fitting"] = r.smallest_fitting;
  j["network_notes"] = network_notes(r, r.ranking.size());
  j["explanation"] = r.explanation;
  j["handoffs"] = json::object();
  for (const auto& f : r.handoffs) j["handoffs"][f.name] = f.text;
  return j;
}

}  // namespace micsim
