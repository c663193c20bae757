#include "planner/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <cmath>
#include <set>

#include "models/calibration/error_bands.hpp"
#include "models/hardware/catalog.hpp"
#include "models/hardware/prices.hpp"
#include "models/io/csv.hpp"
#include "models/io/input_file.hpp"
#include "models/io/output_file.hpp"
#include "models/io/json_input.hpp"
#include "models/io/json_text.hpp"
#include "planner/handoff/handoff.hpp"
#include "planner/plan_checkpoint.hpp"
#include "planner/progress.hpp"
#include "planner/ranks.hpp"
#include "sim/report/report.hpp"

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

std::vector<int> read_int_list(const YamlNode& n, int64_t lo, int64_t hi) {
  constexpr int64_t kMaxValues = 4096;  // a list longer than this is a mistake, not a search
  std::vector<int> out;
  if (n.is_map()) {  // {min, max}: powers of two in range; {min, max, step}: arithmetic
    n.check_keys({"min", "max", "step"});
    int64_t a = n.at("min").as_int_in(lo, hi), b = n.at("max").as_int_in(lo, hi);
    if (b < a) n.at("max").fail("expected max >= min");
    if (auto st = n.get("step")) {
      int64_t s = st->as_int_in(1, hi);
      if ((b - a) / s + 1 > kMaxValues)
        n.fail(fmt::format("{} values from {} to {} in steps of {}: at most {} (use a larger step, or powers of two without a step)",
                           (b - a) / s + 1, a, b, s, kMaxValues));
      for (int64_t v = a; v <= b; v += s) out.push_back(int(v));
    } else {
      for (int64_t v = 1; v <= b; v *= 2)
        if (v >= a) out.push_back(int(v));
      if (out.empty()) n.fail("no power of two in [min, max]");
    }
  } else if (n.is_sequence()) {
    if (int64_t(n.raw().size()) > kMaxValues) n.fail(fmt::format("a list of {} values: at most {}", n.raw().size(), kMaxValues));
    for (const auto& i : n.items()) out.push_back(int(i.as_int_in(lo, hi)));
    if (out.empty()) n.fail("expected a non-empty list");
  } else {
    out.push_back(int(n.as_int_in(lo, hi)));
  }
  return out;
}

std::vector<bool> read_bool_list(const YamlNode& n) {
  std::vector<bool> out;
  if (n.is_sequence()) {
    for (const auto& i : n.items()) out.push_back(i.as_bool());
    if (out.empty()) n.fail("expected a non-empty list");
  } else {
    out.push_back(n.as_bool());
  }
  return out;
}


}  // namespace

const char* objective_key(Objective o) {
  switch (o) {
    case Objective::Throughput: return "throughput";
    case Objective::Time: return "time";
    case Objective::Cost: return "cost";
    case Objective::CostWithinDeadline: return "cost-within-deadline";
  }
  return "?";
}

std::optional<Objective> parse_objective(const std::string& s) {
  for (auto o : {Objective::Throughput, Objective::Time, Objective::Cost, Objective::CostWithinDeadline})
    if (s == objective_key(o)) return o;
  return std::nullopt;
}

void check_plan_spec(const PlanSpec& s, const std::function<void(const std::string& key, const std::string& why)>& fail) {
  if (s.objective != Objective::Throughput && s.target_tokens <= 0)
    fail("objective", fmt::format("objective {} needs target_tokens (tokens to train)", objective_key(s.objective)));
  if (s.objective == Objective::CostWithinDeadline && s.max_days <= 0)
    fail("objective", "objective cost-within-deadline needs max_days (the deadline)");
  if (s.max_days > 0 && s.target_tokens <= 0) fail("max_days", "a deadline needs target_tokens (tokens to train)");
  if (s.max_usd > 0 && s.target_tokens <= 0) fail("max_usd", "a budget needs target_tokens (tokens to train)");
}

PlanSpec read_plan_block(const std::string& path, const std::string& text, const std::vector<std::string>& sets) {
  PlanSpec s;
  // --set plan.key=value reaches the plan block as it reaches the scenario (and is checked the same way).
  YamlNode doc = YamlNode::load_string(text, path);
  auto src = std::make_shared<YamlSource>(*doc.source());
  YAML::Node tree = doc.raw();
  if (tree.IsNull()) tree = YAML::Node(YAML::NodeType::Map);
  apply_overrides(tree, std::vector<Override>(sets.begin(), sets.end()), *src);
  YamlNode root(tree, "", src);
  auto p = root.get("plan");
  if (!p) return s;
  p->check_keys({"instances", "nodes", "strategies", "partition_sizes", "hierarchical_allgather", "micro_batches",
                 "activation_checkpointing", "tp", "pp", "cp", "virtual_stages", "objective", "target_tokens", "max_nodes", "max_usd_per_hour", "max_days",
                 "max_usd", "price_tier", "prices", "top", "refine"});
  const auto& cat = HardwareCatalog::builtin();
  if (auto n = p->get("instances")) {
    for (const auto& item : n->is_sequence() ? n->items() : std::vector<YamlNode>{*n}) {
      std::string name = item.as_string();
      if (!cat.find_instance(name)) {
        std::string hint = closest_match(name, cat.instance_names());
        item.fail(fmt::format("unknown instance '{}'{}", name, hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
      }
      s.instances.push_back(name);
    }
  }
  if (auto n = p->get("nodes")) s.nodes = read_int_list(*n, 1, 1 << 16);
  if (auto n = p->get("strategies")) {
    for (const auto& item : n->is_sequence() ? n->items() : std::vector<YamlNode>{*n})
    {
      std::vector<std::string> kinds = strategy_kind_names();
      kinds.push_back("fsdp");  // FULL_SHARD: zero3
      s.strategies.push_back(item.as_choice(kinds));
    }
  }
  if (auto n = p->get("partition_sizes")) s.partition_sizes = read_int_list(*n, 1, 1 << 20);
  if (auto n = p->get("hierarchical_allgather")) s.hierarchical = read_bool_list(*n);
  if (auto n = p->get("micro_batches")) s.micro_batches = read_int_list(*n, 1, 1 << 16);
  if (auto n = p->get("activation_checkpointing")) s.checkpointing = read_bool_list(*n);
  if (auto n = p->get("tp")) s.tp = read_int_list(*n, 1, 1 << 16);
  if (auto n = p->get("pp")) s.pp = read_int_list(*n, 1, 1 << 16);
  if (auto n = p->get("cp")) s.cp = read_int_list(*n, 1, 1 << 16);
  if (auto n = p->get("virtual_stages")) s.virtual_stages = read_int_list(*n, 1, 1 << 16);
  if (auto n = p->get("objective"))
    s.objective = *parse_objective(n->as_choice({"throughput", "time", "cost", "cost-within-deadline"}));
  if (auto n = p->get("target_tokens")) s.target_tokens = n->as_double_in(1, 1e18);
  if (auto n = p->get("max_nodes")) s.max_nodes = int(n->as_int_in(1, 1 << 20));
  if (auto n = p->get("max_usd_per_hour")) s.max_usd_per_hour = n->as_double_in(0.01, 1e9);
  if (auto n = p->get("max_days")) s.max_days = n->as_double_in(1e-3, 1e5);
  if (auto n = p->get("max_usd")) s.max_usd = n->as_double_in(0.01, 1e15);
  if (auto n = p->get("price_tier")) s.price_tier = n->as_choice(PriceBook::tier_names());
  if (auto n = p->get("prices")) {
    n->require_map();
    for (const auto& k : n->keys()) {
      if (!cat.find_instance(k)) n->at(k).fail("unknown instance '" + k + "'");
      s.prices[k] = n->at(k).as_double_in(0, 1e6);
      s.price_origin[k] = "plan.prices";
    }
  }
  // Consistency (objective vs target, deadline, budget) is checked by the caller once flags are applied.
  if (auto n = p->get("top")) s.top = int(n->as_int_in(1, 100000));
  if (auto n = p->get("refine")) s.refine = int(n->as_int_in(0, 10000));
  return s;
}

namespace {

// Every partition size worth trying on N GPUs with g per node: divisors of g (>1) and multiples of g
// that divide N, except N itself (that is ZeRO-3 / FULL_SHARD).
std::vector<int> valid_partition_sizes(int n_gpus, int g) {
  std::vector<int> out;
  for (int p = 2; p <= std::min(g, n_gpus); ++p)
    if (g % p == 0 && n_gpus % p == 0 && p < n_gpus) out.push_back(p);
  for (int p = 2 * g; p < n_gpus; p += g)
    if (n_gpus % p == 0) out.push_back(p);
  return out;
}

// With model parallelism, partition groups are counted in the ranks holding the same parameters (data
// x context parallel): every divisor of their number between 1 and it.
std::vector<int> valid_dp_partition_sizes(int dp) {
  std::vector<int> out;
  for (int p = 2; p < dp; ++p)
    if (dp % p == 0) out.push_back(p);
  return out;
}

// A candidate's settings without its partition group (to find the same candidate at another p).
std::string key_without_partition(const std::vector<std::string>& overrides) {
  std::string k;
  for (const auto& o : overrides)
    if (o.rfind("strategy.partition_size=", 0) != 0 && o.rfind("strategy.hierarchical_allgather=", 0) != 0) k += o + ";";
  return k;
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

const CollectiveSummary* largest_collective(const SimulationResult& r) {
  const CollectiveSummary* best = nullptr;
  for (const auto& c : r.collectives)
    if (!best || c.total_s > best->total_s) best = &c;
  return best;
}

// Nothing met the deadline or the budget: the candidate that came closest, and by how much.
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

}  // namespace

PlanResult run_plan(const std::string& path, const std::vector<std::string>& base_overrides, const PlanSpec& spec_in) {
  PlanResult res;
  res.spec = spec_in;
  PlanSpec& spec = res.spec;
  check_plan_spec(spec, [&](const std::string& key, const std::string& why) { throw InputError({path, 0, 0}, "plan." + key, why); });
  const std::string text = read_whole_file(path);
  Scenario base = parse_scenario_text(text, path, base_overrides);
  // Instances named by the user (--instances, plan.instances) come from the catalog; otherwise the
  // scenario's own instance is searched, inline or not.
  const bool scenario_instance = spec.instances.empty();
  if (spec.instances.empty()) spec.instances = {base.cluster.instance.name};
  if (spec.nodes.empty()) spec.nodes = {base.cluster.nodes};
  if (spec.strategies.empty()) {
    // The default kinds, less those the scenario's framework cannot run (InternEvo: zero1 only).
    const std::vector<std::string> runs = base.strategy.framework ? framework_kinds(base.strategy.framework->family) : std::vector<std::string>{};
    for (const char* k : {"zero3", "mics", "hsdp", "ddp"})
      if (runs.empty() || std::find(runs.begin(), runs.end(), k) != runs.end()) spec.strategies.push_back(k);
    if (spec.strategies.empty()) spec.strategies = runs;
  }
  // InternEvo's ZeRO-1 shards the optimizer over all data-parallel ranks or within groups (zero1 = p).
  const bool zero1_groups = base.strategy.framework && base.strategy.framework->family == "internevo";
  if (spec.micro_batches.empty()) spec.micro_batches = {int(base.training.micro_batch)};
  if (spec.checkpointing.empty()) spec.checkpointing = {base.training.activation_checkpointing()};
  const bool search_mp = !spec.tp.empty() || !spec.pp.empty() || !spec.cp.empty() || !spec.virtual_stages.empty();
  if (spec.tp.empty()) spec.tp = {base.parallelism.tp};
  if (spec.pp.empty()) spec.pp = {base.parallelism.pp};
  if (spec.cp.empty()) spec.cp = {base.parallelism.cp};
  if (spec.virtual_stages.empty()) spec.virtual_stages = {base.parallelism.virtual_stages};
  // Model-parallel shapes (tp, pp, cp, v); v > 1 only with pp > 1 (interleaved), v = 1 otherwise.
  struct Shape { int tp, pp, cp, v; };
  std::vector<Shape> shapes;
  for (int t : spec.tp)
    for (int q : spec.pp)
      for (int c : spec.cp)
        for (int v : spec.virtual_stages) {
          if (v > 1 && q == 1) continue;
          shapes.push_back({t, q, c, v});
        }
  const bool inline_instance = scenario_instance && base.cluster.instance.name == "inline-instance";

  // 1. Enumerate.
  constexpr size_t kMaxCandidates = 200000;
  std::vector<Variant> variants;
  for (const auto& inst_name : spec.instances) {
    const InstanceSpec& inst = inline_instance ? base.cluster.instance : HardwareCatalog::builtin().instance(inst_name);
    const int g = inst.gpus_per_node;
    for (int nodes : spec.nodes) {
      if (spec.max_nodes > 0 && nodes > spec.max_nodes) {
        res.pruned["more nodes than plan.max_nodes"] += 1;
        continue;
      }
      for (const Shape& shape : shapes)
      for (const auto& kind : spec.strategies) {
        const int mp = shape.tp * shape.pp * shape.cp;
        const bool model_parallel = mp > 1;
        if (model_parallel && (nodes * g) % mp != 0) {
          res.pruned["tp x pp x cp does not divide the GPUs"] += 1;
          continue;
        }
        std::vector<int> ps = {0};
        if (kind == "mics" || kind == "hsdp") {
          ps = !spec.partition_sizes.empty() ? spec.partition_sizes
               : model_parallel               ? valid_dp_partition_sizes(nodes * g / (shape.tp * shape.pp))
                                              : valid_partition_sizes(nodes * g, g);
          if (ps.empty()) continue;
        }
        if (kind == "zero1" && zero1_groups) {
          const int dp = nodes * g / (shape.tp * shape.pp);
          ps = !spec.partition_sizes.empty() ? spec.partition_sizes
               : model_parallel               ? valid_dp_partition_sizes(dp)
                                              : valid_partition_sizes(nodes * g, g);
          if (spec.partition_sizes.empty()) ps.push_back(dp);  // zero1 = -1: every data-parallel rank
        }
        for (int p : ps) {
          std::vector<int> hier = {-1};
          if (kind == "mics" && p > g && !model_parallel) {
            hier.clear();
            for (bool h : spec.hierarchical) hier.push_back(h ? 1 : 0);
          }
          for (int h : hier)
            for (int mb : spec.micro_batches)
              for (bool ck : spec.checkpointing) {
                // Counted before it is built: the search's size is a product of user lists.
                if (variants.size() >= kMaxCandidates)
                  throw InputError({path, 0, 0}, "plan",
                                   fmt::format("the search has more than {} candidates (instances x nodes x strategies x partition "
                                               "sizes x micro-batches x checkpointing); narrow plan.nodes, plan.micro_batches or "
                                               "plan.partition_sizes", kMaxCandidates));
                Variant v;
                v.overrides = base_overrides;
                if (!inline_instance) v.overrides.push_back("cluster.instance=" + inst_name);
                v.overrides.push_back(fmt::format("cluster.nodes={}", nodes));
                v.overrides.push_back("strategy.kind=" + kind);
                if (search_mp || model_parallel) {
                  v.overrides.push_back(fmt::format("parallelism.tp={}", shape.tp));
                  v.overrides.push_back(fmt::format("parallelism.pp={}", shape.pp));
                  v.overrides.push_back(fmt::format("parallelism.cp={}", shape.cp));
                  v.overrides.push_back(fmt::format("parallelism.virtual_stages={}", shape.v));
                  v.overrides.push_back(fmt::format("parallelism.schedule={}", shape.v > 1 ? "interleaved" : "1f1b"));
                }
                if (p > 0) v.overrides.push_back(fmt::format("strategy.partition_size={}", p));
                if (h >= 0) v.overrides.push_back(fmt::format("strategy.hierarchical_allgather={}", h ? "true" : "false"));
                if (kind == "mics") v.overrides.push_back("strategy.two_hop_sync=true");
                v.overrides.push_back(fmt::format("training.micro_batch={}", mb));
                // "true" keeps the scenario's own policy (selective-op, selective-layer with its checkpoint_every).
                const bool policy = base.training.checkpointing != Checkpointing::None;
                v.overrides.push_back(fmt::format("training.activation_checkpointing={}",
                                                  !ck ? "none" : policy ? to_string(base.training.checkpointing) : "full"));
                if (!ck && base.training.checkpointing == Checkpointing::SelectiveLayer) v.overrides.push_back("training.checkpoint_every=null");
                variants.push_back(std::move(v));
              }
        }
      }
    }
  }
  res.candidates = variants.size() + res.pruned["more nodes than plan.max_nodes"] + res.pruned["tp x pp x cp does not divide the GPUs"];
  if (res.pruned["more nodes than plan.max_nodes"] == 0) res.pruned.erase("more nodes than plan.max_nodes");
  if (res.pruned["tp x pp x cp does not divide the GPUs"] == 0) res.pruned.erase("tp x pp x cp does not divide the GPUs");

  // 2. Evaluate every candidate with the analytic engine (all cores). Results come back in candidate
  //    order whatever the thread timing.
  auto t0 = std::chrono::steady_clock::now();
  EvaluateOptions eo;
  eo.threads = spec.threads;
  eo.simulate_non_fitting = true;  // their rate is drawn (as not fitting) by scripts/plot
  if (spec.progress) eo.progress_label = "plan: analytic";
  res.evaluations = evaluate_variants(text, path, variants, eo);
  res.analytic_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.evaluated = res.evaluations.size();

  // 3. Prune: invalid, does not fit, over the hourly budget, no price for a cost objective or budget.
  struct Price {
    double usd_per_hour = 0;  // whole cluster
    std::string source;
  };
  auto price_of = [&](const Scenario& sc) -> std::optional<Price> {
    const std::string& name = sc.cluster.instance.name;
    const int n = sc.cluster.nodes;
    if (auto it = spec.prices.find(name); it != spec.prices.end())
      return Price{it->second * n, fmt::format("{} ${}/h ({})", name, it->second, spec.price_origin.count(name) ? spec.price_origin.at(name) : "override")};
    if (sc.cluster.instance.price_explicit && sc.cluster.instance.price_usd_per_hour)
      return Price{*sc.cluster.instance.price_usd_per_hour * n, fmt::format("{} ${}/h (instance entry)", name, *sc.cluster.instance.price_usd_per_hour)};
    if (auto q = PriceBook::builtin().quote(name, spec.price_tier))
      return Price{q->usd_per_hour * n, fmt::format("{} ${}/h: {}", name, q->usd_per_hour, q->describe())};
    return std::nullopt;
  };
  const bool needs_price = spec.objective == Objective::Cost || spec.objective == Objective::CostWithinDeadline || spec.max_usd > 0;
  for (size_t i = 0; i < res.evaluations.size(); ++i) {
    const Evaluation& e = res.evaluations[i];
    if (!e.valid) {
      res.pruned[reason_category(e.reason_key, e.reason)] += 1;
      continue;
    }
    auto price = price_of(*e.scenario);
    if (!e.analytic.memory.fits) {
      res.pruned["does not fit in GPU memory"] += 1;
      PlanRow miss;
      miss.index = i, miss.eval = &e, miss.has_price = price.has_value();
      miss.price_usd_per_hour = price ? price->usd_per_hour : 0;
      miss.tokens_per_s = e.analytic.tokens_per_s;
      res.not_fitting.push_back(miss);
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
    PlanRow row;
    row.index = i;
    row.eval = &e;
    row.has_price = price.has_value();
    row.price_usd_per_hour = price ? price->usd_per_hour : 0;
    row.price_source = price ? price->source : "";
    res.ranking.push_back(row);
  }
  auto score = [&](PlanRow& row, const SimulationResult& r) {
    row.tokens_per_s = r.tokens_per_s;
    row.hours_for_target = spec.target_tokens > 0 ? spec.target_tokens / r.tokens_per_s / 3600.0 : 0;
    row.usd_for_target = row.hours_for_target * row.price_usd_per_hour;
    switch (spec.objective) {
      case Objective::Throughput: row.objective = -r.tokens_per_s; break;
      case Objective::Time: row.objective = 1.0 / r.tokens_per_s; break;
      case Objective::Cost:
      case Objective::CostWithinDeadline: row.objective = row.price_usd_per_hour / r.tokens_per_s; break;
    }
  };
  auto by_objective = [](const PlanRow& a, const PlanRow& b) {
    return a.objective != b.objective ? a.objective < b.objective : a.index < b.index;
  };
  // The deadline and the total budget, on the engine that scored the row. The nearest miss is kept
  // for the message when nothing is left.
  std::vector<PlanRow> missed;
  auto within_limits = [&](std::vector<PlanRow>& rows, size_t from, size_t to, const char* engine) {
    std::vector<PlanRow> kept(rows.begin(), rows.begin() + long(from));
    for (size_t i = from; i < to; ++i) {
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
  };
  // The top K are chosen by the analytic engine alone: a pure function of the inputs, whatever a
  // checkpoint already holds.
  for (auto& row : res.ranking) score(row, row.eval->analytic);
  std::sort(res.ranking.begin(), res.ranking.end(), by_objective);
  within_limits(res.ranking, 0, res.ranking.size(), "analytic");

  // 4. Re-simulate the top K with the SimGrid engine (refinements saved by an earlier run of the same
  //    search are taken from the checkpoint), then rank those K by what it says.
  const size_t k = std::min<size_t>(spec.refine, res.ranking.size());
  if (k > 0) {
    auto t1 = std::chrono::steady_clock::now();
    PlanCheckpoint ck(spec.checkpoint, plan_key(text, base_overrides, variants));
    // Rank 0 reads (and may repair) the checkpoint; the other ranks receive what it holds.
    std::map<size_t, SimulationResult> saved;
    if (ranks::is_root()) saved = ck.load(variants.size());
    if (ranks::size() > 1) {
      std::map<size_t, const SimulationResult*> held;
      for (const auto& [i, r] : saved) held[i] = &r;
      saved = all_gather_results(variants.size(), held);
    }
    std::vector<Evaluation*> todo;
    std::vector<size_t> todo_index;
    for (size_t i = 0; i < k; ++i) {
      const size_t idx = res.ranking[i].index;
      Evaluation& e = res.evaluations[idx];
      auto it = saved.find(idx);
      if (it != saved.end()) {
        // A saved refinement must be of this candidate (same cluster shape and groups).
        if (it->second.world_size != e.analytic.world_size || it->second.partition_size != e.analytic.partition_size ||
            it->second.global_batch != e.analytic.global_batch)
          throw InputError({spec.checkpoint, 0, 0}, "", fmt::format("the record of candidate {} does not match it; delete the file to start afresh", idx));
        e.simgrid = it->second;
      } else {
        todo.push_back(&e);
        todo_index.push_back(idx);
      }
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
      score(res.ranking[i], *res.ranking[i].eval->simgrid);
    }
    std::sort(res.ranking.begin(), res.ranking.begin() + long(k), by_objective);
    within_limits(res.ranking, 0, k, "SimGrid");
    res.simgrid_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  }

  // 5. Pareto front: more tokens/s for fewer dollars per token.
  std::vector<size_t> order;
  for (size_t i = 0; i < res.ranking.size(); ++i)
    if (res.ranking[i].has_price) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = res.ranking[a], &y = res.ranking[b];
    return x.tokens_per_s != y.tokens_per_s ? x.tokens_per_s > y.tokens_per_s : x.index < y.index;
  });
  double best_cost = 1e300;
  for (size_t i : order) {
    double cost = res.ranking[i].price_usd_per_hour / res.ranking[i].tokens_per_s;
    if (cost < best_cost - 1e-15) {
      best_cost = cost;
      res.ranking[i].pareto = true;
      res.pareto.push_back(i);
    }
  }

  // 6. The smallest partition group that fits, per instance and sharded strategy.
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
      res.smallest_fitting.push_back(fmt::format("{} {}: p = {} fits ({} headroom per GPU) with {}: {:.0f} tokens/s, {}", inst, kind,
                                                 best_p, human_bytes(r.memory.headroom_bytes()), describe(*best->eval->scenario),
                                                 r.tokens_per_s, cost));
    }

  // 7. Explain the winner; hand-off fragments. With no winner, explain the nearest miss.
  if (res.ranking.empty() && !missed.empty()) res.explanation = explain_nearest_miss(spec, missed);
  else if (res.ranking.empty()) res.explanation = explain_nothing_fits(res.evaluations);
  if (!res.ranking.empty()) {
    const PlanRow& w = res.ranking.front();
    const SimulationResult& r = w.eval->best();
    const Scenario& sc = *w.eval->scenario;
    std::string& x = res.explanation;
    const double T = r.iteration_time_s;
    x += fmt::format("{}: {} per step ({}), {:.0f} % compute, {:.0f} % exposed communication, {:.0f} % idle.\n",
                     describe(sc), human_seconds(T), r.engine, 100 * r.compute_s / T, 100 * r.exposed_comm_s / T, 100 * r.idle_s / T);
    if (const auto* c = largest_collective(r))
      x += fmt::format("  Largest collective: {} in the {} ({} ranks on {} node(s), {} {}/{}), {} per step, bound by the {} tier.\n",
                       c->task, c->group, c->estimate.layout.ranks, c->estimate.layout.nodes, human_bytes(c->estimate.bytes),
                       to_string(c->estimate.algorithm), to_string(c->estimate.protocol), human_seconds(c->total_s),
                       to_string(c->estimate.bottleneck));
    // The best of each other strategy, on the same instance.
    auto family = [](const Scenario& o) { return std::string(to_string(o.strategy.kind)) + (o.parallelism.none() ? "" : " with model parallelism"); };
    std::set<std::string> seen = {family(sc)};
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
      if (spec.objective == Objective::Cost)
        cmp = fmt::format("{:.2f}x the winner's cost for the target", row.usd_for_target / w.usd_for_target);
      else if (spec.objective == Objective::Time)
        cmp = fmt::format("{:.2f}x the winner's time for the target", row.hours_for_target / w.hours_for_target);
      else
        cmp = fmt::format("{:.2f}x the winner's throughput", row.tokens_per_s / w.tokens_per_s);
      x += fmt::format("  Best {}: {} -> {} ({:.0f} % of its step is exposed communication{}).\n", kind, describe(o), cmp,
                       100 * ro.exposed_comm_s / ro.iteration_time_s, why);
    }
    // The question users ask: 3-D parallelism or MiCS on this cluster, and at what cost?
    {
      const PlanRow *best3d = nullptr, *best_mics = nullptr;
      for (const auto& row : res.ranking) {
        const Scenario& o = *row.eval->scenario;
        if (!best3d && !o.parallelism.none()) best3d = &row;
        if (!best_mics && o.parallelism.none() && o.strategy.kind == StrategyKind::MiCS) best_mics = &row;
      }
      auto line = [&](const char* what, const PlanRow* row) {
        const SimulationResult& rr = row->eval->best();
        std::string usd = row->has_price ? fmt::format(", ${:.0f} per 1e12 tokens", row->price_usd_per_hour / (rr.tokens_per_s * 3600.0) * 1e12) : "";
        return fmt::format("  {}: {} -> {:.0f} tokens/s ({:.0f} % MFU), {} peak memory per GPU{}.\n", what, describe(*row->eval->scenario),
                           rr.tokens_per_s, 100 * rr.mfu, human_bytes(rr.memory.peak_bytes), usd);
      };
      if (best3d && best_mics) {
        x += line("Best 3-D plan", best3d);
        x += line("Best MiCS plan", best_mics);
        x += fmt::format("  3-D / MiCS throughput: {:.2f}x (same cluster and global batch; {} engine).\n",
                         best3d->tokens_per_s / best_mics->tokens_per_s, best3d->refined && best_mics->refined ? "SimGrid" : "ranking");
      }
    }
    // Neighbouring partition sizes.
    if (sc.strategy.kind == StrategyKind::MiCS || sc.strategy.kind == StrategyKind::HSDP) {
      const int p = r.partition_size;
      const std::string key = key_without_partition(w.eval->variant.overrides);
      for (int q : {p / 2, p * 2}) {
        // The same settings at p = q (with the hierarchical gather when the group spans nodes).
        const Evaluation* e = nullptr;
        for (const auto& cand : res.evaluations) {
          if (!cand.valid || key_without_partition(cand.variant.overrides) != key || cand.analytic.partition_size != q) continue;
          if (!e || (cand.scenario->strategy.hierarchical_allgather && !e->scenario->strategy.hierarchical_allgather)) e = &cand;
        }
        if (!e || q < 2) continue;
        if (!e->analytic.memory.fits) {
          x += fmt::format("  p = {}: does not fit ({} over per GPU).\n", q, human_bytes(-e->analytic.memory.headroom_bytes()));
        } else {
          x += fmt::format("  p = {}: {:+.1f} % throughput (analytic), {} headroom per GPU (winner: {}).\n", q,
                           100 * (e->analytic.tokens_per_s / w.eval->analytic.tokens_per_s - 1),
                           human_bytes(e->analytic.memory.headroom_bytes()), human_bytes(r.memory.headroom_bytes()));
        }
      }
    }
    res.handoffs = all_handoffs(sc, r);
  }
  return res;
}

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

// The network notes of the first `rows` ranked candidates, once each: clusters larger than the measurements
// their fabric's terms rest on (or on a fabric whose terms are assumed), whose step times carry an error the
// published rows do not bound.
static std::vector<std::string> network_notes(const PlanResult& r, size_t rows) {
  std::set<std::string> notes;
  for (size_t i = 0; i < r.ranking.size() && i < rows; ++i)
    if (const std::string& n = r.ranking[i].eval->best().network_note; !n.empty()) notes.insert(n);
  return {notes.begin(), notes.end()};
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
