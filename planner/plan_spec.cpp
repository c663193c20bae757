#include "planner/plan.hpp"

#include <fmt/format.h>

#include <memory>

#include "models/hardware/catalog.hpp"
#include "models/hardware/prices.hpp"
#include "models/io/input_file.hpp"
#include "models/io/yaml_node.hpp"

// The plan block of a scenario (plan:) and the objectives a search can rank by.
namespace micsim {

namespace {

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

}  // namespace micsim
