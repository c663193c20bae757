#include "planner/plan_explain.hpp"

#include <fmt/format.h>

#include <set>

#include "sim/report/report.hpp"

namespace micsim {

namespace {

const CollectiveSummary* largest_collective(const SimulationResult& r) {
  const CollectiveSummary* best = nullptr;
  for (const auto& c : r.collectives)
    if (!best || c.total_s > best->total_s) best = &c;
  return best;
}

// A candidate's settings without its partition group (to find the same candidate at another p).
std::string key_without_partition(const std::vector<std::string>& overrides) {
  std::string k;
  for (const auto& o : overrides)
    if (o.rfind("strategy.partition_size=", 0) != 0 && o.rfind("strategy.hierarchical_allgather=", 0) != 0) k += o + ";";
  return k;
}

}  // namespace

std::string describe(const Scenario& sc) {
  ParallelLayout l = make_layout(sc.strategy, sc.cluster.nodes, sc.cluster.instance.gpus_per_node, sc.parallelism);
  std::string s = fmt::format("{} x {} {}", sc.cluster.nodes, sc.cluster.instance.name, to_string(sc.strategy.kind));
  if (!sc.parallelism.none()) s = fmt::format("{} x {} {} + {}", sc.cluster.nodes, sc.cluster.instance.name, describe(sc.parallelism),
                                              to_string(sc.strategy.kind));
  if (sc.strategy.kind == StrategyKind::MiCS || sc.strategy.kind == StrategyKind::HSDP || l.partition_size < l.dp)
    s += fmt::format(" p={}", l.partition_size);
  if (l.hierarchical) s += " hierarchical";
  s += fmt::format(", micro-batch {}{}", sc.training.micro_batch, sc.training.activation_checkpointing() ? ", checkpointing" : "");
  return s;
}

// Nothing fits: name the candidate that came closest and say what it would take (more GPUs to shard
// over, or a smaller working set), so the user knows which knob to turn.
std::string explain_nothing_fits(const std::vector<Evaluation>& evals) {
  const Evaluation* closest = nullptr;
  double closest_over = 0;
  size_t invalid = 0;
  for (const auto& e : evals) {
    if (!e.valid) {
      ++invalid;
      continue;
    }
    const double over = -e.analytic.memory.headroom_bytes();
    if (!closest || over < closest_over) closest = &e, closest_over = over;
  }
  if (!closest)
    return fmt::format("No configuration fits: all {} candidates are invalid (see the pruned reasons above).\n", invalid);
  const SimulationResult& r = closest->analytic;
  const Scenario& sc = *closest->scenario;
  std::string x = fmt::format("No configuration fits in GPU memory. Closest: {}, {} per GPU over the {} usable.\n  Why: {}.\n",
                              describe(sc), human_bytes(closest_over), human_bytes(r.memory.capacity_bytes - r.memory.reserve_bytes),
                              memory_shortfall_text(r.memory, r.world_size));
  if (r.memory.gpus_to_fit > r.world_size) {
    const int per_node = sc.cluster.instance.gpus_per_node;
    x += fmt::format("  With {} ({} GPUs per node) that is at least {} nodes; search them with --nodes or plan.nodes.\n",
                     sc.cluster.instance.name, per_node, (r.memory.gpus_to_fit + per_node - 1) / per_node);
  }
  return x;
}

std::string explain_nearest_miss(const PlanSpec& spec, const std::vector<PlanRow>& missed) {
  const PlanRow* best = nullptr;
  double best_ratio = 1e300;
  for (const auto& row : missed) {
    double ratio = 0;
    if (spec.max_days > 0) ratio = std::max(ratio, row.hours_for_target / 24 / spec.max_days);
    if (spec.max_usd > 0) ratio = std::max(ratio, row.usd_for_target / spec.max_usd);
    if (ratio < best_ratio) best_ratio = ratio, best = &row;
  }
  std::string limits;
  if (spec.max_days > 0) limits += fmt::format("{:g} days", spec.max_days);
  if (spec.max_usd > 0) limits += fmt::format("{}${:.0f}", limits.empty() ? "" : " and ", spec.max_usd);
  std::string x = fmt::format("Nothing fits within {} for {:.3g} tokens ({} candidate(s) fit in memory but miss). Nearest miss: {}: ",
                              limits, spec.target_tokens, missed.size(), describe(*best->eval->scenario));
  x += fmt::format("{:.1f} days", best->hours_for_target / 24);
  if (best->has_price) x += fmt::format(", ${:.0f}", best->usd_for_target);
  x += fmt::format(" ({:.2f}x the limit, {}).\n", best_ratio, best->eval->best().engine);
  if (spec.max_days > 0)
    x += "  More nodes, a faster instance type, or a later deadline (--max-days) would bring it in; the time to train scales "
         "with 1 / tokens per second.\n";
  if (spec.max_usd > 0)
    x += "  A cheaper price tier (--price-tier spot | capacity_block), a negotiated price (--price INSTANCE=USD) or a larger "
         "budget (--max-usd) would bring it in.\n";
  return x;
}

namespace {

// The winner's step: compute, exposed communication and idle shares, and its largest collective.
std::string step_makeup(const PlanRow& w) {
  const SimulationResult& r = w.eval->best();
  const double T = r.iteration_time_s;
  std::string x = fmt::format("{}: {} per step ({}), {:.0f} % compute, {:.0f} % exposed communication, {:.0f} % idle.\n",
                              describe(*w.eval->scenario), human_seconds(T), r.engine, 100 * r.compute_s / T, 100 * r.exposed_comm_s / T,
                              100 * r.idle_s / T);
  if (const auto* c = largest_collective(r))
    x += fmt::format("  Largest collective: {} in the {} ({} ranks on {} node(s), {} {}/{}), {} per step, bound by the {} tier.\n",
                     c->task, c->group, c->estimate.layout.ranks, c->estimate.layout.nodes, human_bytes(c->estimate.bytes),
                     to_string(c->estimate.algorithm), to_string(c->estimate.protocol), human_seconds(c->total_s),
                     to_string(c->estimate.bottleneck));
  return x;
}

// The best of each other strategy on the winner's instance, against the winner on the plan's objective.
std::string best_of_other_strategies(const PlanResult& res) {
  const PlanRow& w = res.ranking.front();
  const Scenario& sc = *w.eval->scenario;
  auto family = [](const Scenario& o) { return std::string(to_string(o.strategy.kind)) + (o.parallelism.none() ? "" : " with model parallelism"); };
  std::set<std::string> seen = {family(sc)};
  std::string x;
  for (const auto& row : res.ranking) {
    const Scenario& o = *row.eval->scenario;
    std::string kind = family(o);
    if (seen.count(kind) || o.cluster.instance.name != sc.cluster.instance.name) continue;
    seen.insert(kind);
    const SimulationResult& ro = row.eval->best();
    std::string why;
    if (const auto* c = largest_collective(ro))
      why = fmt::format("; its largest collective is {} in the {} over {} node(s) ({} per step, {} tier)", c->task, c->group,
                        c->estimate.layout.nodes, human_seconds(c->total_s), to_string(c->estimate.bottleneck));
    std::string cmp;
    if (res.spec.objective == Objective::Cost)
      cmp = fmt::format("{:.2f}x the winner's cost for the target", row.usd_for_target / w.usd_for_target);
    else if (res.spec.objective == Objective::Time)
      cmp = fmt::format("{:.2f}x the winner's time for the target", row.hours_for_target / w.hours_for_target);
    else
      cmp = fmt::format("{:.2f}x the winner's throughput", row.tokens_per_s / w.tokens_per_s);
    x += fmt::format("  Best {}: {} -> {} ({:.0f} % of its step is exposed communication{}).\n", kind, describe(o), cmp,
                     100 * ro.exposed_comm_s / ro.iteration_time_s, why);
  }
  return x;
}

// The question users ask: 3-D parallelism or MiCS on this cluster, and at what cost? ("" unless both were ranked)
std::string three_d_versus_mics(const PlanResult& res) {
  const PlanRow *best3d = nullptr, *best_mics = nullptr;
  for (const auto& row : res.ranking) {
    const Scenario& o = *row.eval->scenario;
    if (!best3d && !o.parallelism.none()) best3d = &row;
    if (!best_mics && o.parallelism.none() && o.strategy.kind == StrategyKind::MiCS) best_mics = &row;
  }
  if (!best3d || !best_mics) return "";
  auto line = [&](const char* what, const PlanRow* row) {
    const SimulationResult& rr = row->eval->best();
    std::string usd = row->has_price ? fmt::format(", ${:.0f} per 1e12 tokens", row->price_usd_per_hour / (rr.tokens_per_s * 3600.0) * 1e12) : "";
    return fmt::format("  {}: {} -> {:.0f} tokens/s ({:.0f} % MFU), {} peak memory per GPU{}.\n", what, describe(*row->eval->scenario),
                       rr.tokens_per_s, 100 * rr.mfu, human_bytes(rr.memory.peak_bytes), usd);
  };
  return line("Best 3-D plan", best3d) + line("Best MiCS plan", best_mics) +
         fmt::format("  3-D / MiCS throughput: {:.2f}x (same cluster and global batch; {} engine).\n",
                     best3d->tokens_per_s / best_mics->tokens_per_s, best3d->refined && best_mics->refined ? "SimGrid" : "ranking");
}

// A MiCS or HSDP winner at half and twice its partition group, all else the same (analytic engine).
std::string neighbouring_partition_sizes(const PlanResult& res) {
  const PlanRow& w = res.ranking.front();
  const Scenario& sc = *w.eval->scenario;
  if (sc.strategy.kind != StrategyKind::MiCS && sc.strategy.kind != StrategyKind::HSDP) return "";
  const SimulationResult& r = w.eval->best();
  const int p = r.partition_size;
  const std::string key = key_without_partition(w.eval->variant.overrides);
  std::string x;
  for (int q : {p / 2, p * 2}) {
    // The same settings at p = q (with the hierarchical gather when the group spans nodes).
    const Evaluation* e = nullptr;
    for (const auto& cand : res.evaluations) {
      if (!cand.valid || key_without_partition(cand.variant.overrides) != key || cand.analytic.partition_size != q) continue;
      if (!e || (cand.scenario->strategy.hierarchical_allgather && !e->scenario->strategy.hierarchical_allgather)) e = &cand;
    }
    if (!e || q < 2) continue;
    if (!e->analytic.memory.fits)
      x += fmt::format("  p = {}: does not fit ({} over per GPU).\n", q, human_bytes(-e->analytic.memory.headroom_bytes()));
    else
      x += fmt::format("  p = {}: {:+.1f} % throughput (analytic), {} headroom per GPU (winner: {}).\n", q,
                       100 * (e->analytic.tokens_per_s / w.eval->analytic.tokens_per_s - 1),
                       human_bytes(e->analytic.memory.headroom_bytes()), human_bytes(r.memory.headroom_bytes()));
  }
  return x;
}

}  // namespace

std::string explain_winner(const PlanResult& res) {
  return step_makeup(res.ranking.front()) + best_of_other_strategies(res) + three_d_versus_mics(res) + neighbouring_partition_sizes(res);
}

std::vector<std::string> smallest_fitting(const PlanResult& res, bool inline_instance) {
  const PlanSpec& spec = res.spec;
  std::vector<std::string> out;
  for (const auto& inst : spec.instances)
    for (const char* kind : {"mics", "hsdp"}) {
      const PlanRow* best = nullptr;
      int best_p = 1 << 30;
      for (const auto& row : res.ranking) {
        const Scenario& sc = *row.eval->scenario;
        if (sc.cluster.instance.name != inst && !inline_instance) continue;
        if (std::string(to_string(sc.strategy.kind)) != kind) continue;
        int p = row.eval->analytic.partition_size;
        if (p < best_p || (p == best_p && row.objective < best->objective)) best_p = p, best = &row;
      }
      if (!best) continue;
      const auto& r = best->eval->best();
      std::string cost = best->has_price ? fmt::format("${:.2f}/h", best->price_usd_per_hour) : "no price";
      if (best->has_price && spec.target_tokens > 0) cost += fmt::format(", ${:.0f} for the target", best->usd_for_target);
      out.push_back(fmt::format("{} {}: p = {} fits ({} headroom per GPU) with {}: {:.0f} tokens/s, {}", inst, kind, best_p,
                                human_bytes(r.memory.headroom_bytes()), describe(*best->eval->scenario), r.tokens_per_s, cost));
    }
  return out;
}

}  // namespace micsim
