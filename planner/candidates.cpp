#include "planner/candidates.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "models/framework/framework.hpp"
#include "models/hardware/catalog.hpp"
#include "models/io/input_error.hpp"

namespace micsim {

namespace {

constexpr size_t kMaxCandidates = 200000;
constexpr const char* kOverMaxNodes = "more nodes than plan.max_nodes";
constexpr const char* kShapeDoesNotDivide = "tp x pp x cp does not divide the GPUs";

// A model-parallel shape (tp, pp, cp, virtual stages); v > 1 only with pp > 1 (interleaved).
struct Shape {
  int tp, pp, cp, v;
  bool model_parallel() const { return tp * pp * cp > 1; }
};

// What the user asked for, read before the empty lists are filled in.
struct Asked {
  bool model_parallelism = false;  // any of tp, pp, cp, virtual_stages given: every candidate states its degrees
  bool zero1_groups = false;       // InternEvo: ZeRO-1 over all data-parallel ranks or within groups (zero1 = p)
};

Asked complete_plan_spec(PlanSpec& spec, const Scenario& base) {
  Asked asked;
  asked.model_parallelism = !spec.tp.empty() || !spec.pp.empty() || !spec.cp.empty() || !spec.virtual_stages.empty();
  asked.zero1_groups = base.strategy.framework && base.strategy.framework->family == "internevo";
  // Instances named by the user (--instances, plan.instances) come from the catalog; otherwise the
  // scenario's own instance is searched, inline or not.
  if (spec.instances.empty()) spec.instances = {base.cluster.instance.name};
  if (spec.nodes.empty()) spec.nodes = {base.cluster.nodes};
  if (spec.strategies.empty()) {
    // The default kinds, less those the scenario's framework cannot run (InternEvo: zero1 only).
    const std::vector<std::string> runs = base.strategy.framework ? framework_kinds(base.strategy.framework->family) : std::vector<std::string>{};
    for (const char* k : {"zero3", "mics", "hsdp", "ddp"})
      if (runs.empty() || std::find(runs.begin(), runs.end(), k) != runs.end()) spec.strategies.push_back(k);
    if (spec.strategies.empty()) spec.strategies = runs;
  }
  if (spec.micro_batches.empty()) spec.micro_batches = {int(base.training.micro_batch)};
  if (spec.checkpointing.empty()) spec.checkpointing = {base.training.activation_checkpointing()};
  if (spec.tp.empty()) spec.tp = {base.parallelism.tp};
  if (spec.pp.empty()) spec.pp = {base.parallelism.pp};
  if (spec.cp.empty()) spec.cp = {base.parallelism.cp};
  if (spec.virtual_stages.empty()) spec.virtual_stages = {base.parallelism.virtual_stages};
  return asked;
}

std::vector<Shape> model_parallel_shapes(const PlanSpec& spec) {
  std::vector<Shape> shapes;
  for (int t : spec.tp)
    for (int q : spec.pp)
      for (int c : spec.cp)
        for (int v : spec.virtual_stages)
          if (v == 1 || q > 1) shapes.push_back({t, q, c, v});
  return shapes;
}

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

// The partition sizes a strategy is tried at ({0}: it has none); empty: nothing to try.
std::vector<int> partition_sizes_for(const std::string& kind, const PlanSpec& spec, const Asked& asked, int nodes, int g, const Shape& shape) {
  const int dp = nodes * g / (shape.tp * shape.pp);
  auto searched = [&] {
    return !spec.partition_sizes.empty() ? spec.partition_sizes
           : shape.model_parallel()      ? valid_dp_partition_sizes(dp)
                                         : valid_partition_sizes(nodes * g, g);
  };
  if (kind == "mics" || kind == "hsdp") return searched();
  if (kind == "zero1" && asked.zero1_groups) {
    std::vector<int> ps = searched();
    if (spec.partition_sizes.empty()) ps.push_back(dp);  // zero1 = -1: every data-parallel rank
    return ps;
  }
  return {0};
}

// MiCS groups that span nodes are tried with and without the hierarchical gather ({-1}: not a choice).
std::vector<int> hierarchical_choices(const std::string& kind, const PlanSpec& spec, int p, int g, const Shape& shape) {
  if (kind != "mics" || p <= g || shape.model_parallel()) return {-1};
  std::vector<int> out;
  for (bool h : spec.hierarchical) out.push_back(h ? 1 : 0);
  return out;
}

struct Choice {
  std::string instance;
  int nodes;
  Shape shape;
  std::string kind;
  int partition_size;  // 0: the strategy has none
  int hierarchical;    // -1: not a choice
  int micro_batch;
  bool checkpointing;
};

Variant make_variant(const Choice& c, const Scenario& base, const std::vector<std::string>& base_overrides, const Asked& asked,
                     bool inline_instance) {
  Variant v;
  v.overrides = base_overrides;
  if (!inline_instance) v.overrides.push_back("cluster.instance=" + c.instance);
  v.overrides.push_back(fmt::format("cluster.nodes={}", c.nodes));
  v.overrides.push_back("strategy.kind=" + c.kind);
  if (asked.model_parallelism || c.shape.model_parallel()) {
    v.overrides.push_back(fmt::format("parallelism.tp={}", c.shape.tp));
    v.overrides.push_back(fmt::format("parallelism.pp={}", c.shape.pp));
    v.overrides.push_back(fmt::format("parallelism.cp={}", c.shape.cp));
    v.overrides.push_back(fmt::format("parallelism.virtual_stages={}", c.shape.v));
    v.overrides.push_back(fmt::format("parallelism.schedule={}", c.shape.v > 1 ? "interleaved" : "1f1b"));
  }
  if (c.partition_size > 0) v.overrides.push_back(fmt::format("strategy.partition_size={}", c.partition_size));
  if (c.hierarchical >= 0) v.overrides.push_back(fmt::format("strategy.hierarchical_allgather={}", c.hierarchical ? "true" : "false"));
  if (c.kind == "mics") v.overrides.push_back("strategy.two_hop_sync=true");
  v.overrides.push_back(fmt::format("training.micro_batch={}", c.micro_batch));
  // "true" keeps the scenario's own policy (selective-op, selective-layer with its checkpoint_every).
  const bool policy = base.training.checkpointing != Checkpointing::None;
  v.overrides.push_back(fmt::format("training.activation_checkpointing={}",
                                    !c.checkpointing ? "none" : policy ? to_string(base.training.checkpointing) : "full"));
  if (!c.checkpointing && base.training.checkpointing == Checkpointing::SelectiveLayer)
    v.overrides.push_back("training.checkpoint_every=null");
  return v;
}

}  // namespace

CandidateSpace enumerate_candidates(const std::string& path, const Scenario& base, const std::vector<std::string>& base_overrides,
                                    PlanSpec& spec) {
  CandidateSpace space;
  const bool scenario_instance = spec.instances.empty();
  const Asked asked = complete_plan_spec(spec, base);
  space.inline_instance = scenario_instance && base.cluster.instance.name == "inline-instance";
  const std::vector<Shape> shapes = model_parallel_shapes(spec);
  for (const auto& inst_name : spec.instances) {
    const InstanceSpec& inst = space.inline_instance ? base.cluster.instance : HardwareCatalog::builtin().instance(inst_name);
    const int g = inst.gpus_per_node;
    for (int nodes : spec.nodes) {
      if (spec.max_nodes > 0 && nodes > spec.max_nodes) {
        space.pruned[kOverMaxNodes] += 1;
        continue;
      }
      for (const Shape& shape : shapes)
        for (const auto& kind : spec.strategies) {
          if (shape.model_parallel() && (nodes * g) % (shape.tp * shape.pp * shape.cp) != 0) {
            space.pruned[kShapeDoesNotDivide] += 1;
            continue;
          }
          for (int p : partition_sizes_for(kind, spec, asked, nodes, g, shape))
            for (int h : hierarchical_choices(kind, spec, p, g, shape))
              for (int mb : spec.micro_batches)
                for (bool ck : spec.checkpointing) {
                  // Counted before it is built: the search's size is a product of user lists.
                  if (space.variants.size() >= kMaxCandidates)
                    throw InputError({path, 0, 0}, "plan",
                                     fmt::format("the search has more than {} candidates (instances x nodes x strategies x partition "
                                                 "sizes x micro-batches x checkpointing); narrow plan.nodes, plan.micro_batches or "
                                                 "plan.partition_sizes", kMaxCandidates));
                  space.variants.push_back(
                      make_variant({inst_name, nodes, shape, kind, p, h, mb, ck}, base, base_overrides, asked, space.inline_instance));
                }
        }
    }
  }
  return space;
}

}  // namespace micsim
