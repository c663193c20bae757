#include "sim/strategy/strategy.hpp"

#include <algorithm>
#include <cmath>

namespace micsim {

const char* to_string(StrategyKind k) {
  switch (k) {
    case StrategyKind::DDP: return "ddp";
    case StrategyKind::Zero1: return "zero1";
    case StrategyKind::Zero2: return "zero2";
    case StrategyKind::Zero3: return "zero3";
    case StrategyKind::MiCS: return "mics";
    case StrategyKind::HSDP: return "hsdp";
  }
  return "?";
}

const std::vector<std::string>& strategy_kind_names() {
  static const std::vector<std::string> names = {"ddp", "zero1", "zero2", "zero3", "mics", "hsdp"};
  return names;
}

std::optional<StrategyKind> parse_strategy_kind(const std::string& s) {
  for (auto k : {StrategyKind::DDP, StrategyKind::Zero1, StrategyKind::Zero2, StrategyKind::Zero3,
                 StrategyKind::MiCS, StrategyKind::HSDP})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

GroupLayout ParallelLayout::strided(int ranks, int stride) const {
  const int g = gpus_per_node;
  const int per_node = stride < g && g % stride == 0 ? std::max(1, std::min(ranks, g / stride)) : 1;
  const int group_nodes = (ranks + per_node - 1) / per_node;
  return GroupLayout::make(group_nodes * per_node, group_nodes, std::max(1, g / per_node));
}

GroupLayout ParallelLayout::world_group() const { return strided(dp, mp.tp); }
GroupLayout ParallelLayout::partition_group() const { return strided(partition_size, mp.tp); }
GroupLayout ParallelLayout::replication_group() const { return strided(replication_size, partition_size * mp.tp); }
GroupLayout ParallelLayout::tensor_group() const { return strided(mp.tp, 1); }
GroupLayout ParallelLayout::context_group() const { return strided(mp.cp, mp.tp); }
GroupLayout ParallelLayout::pipeline_pair() const { return strided(2, mp.tp * dp); }

int ParallelLayout::partition_group_nodes() const { return partition_group().nodes; }
int ParallelLayout::partition_members_per_node() const { return partition_group().ranks_per_node; }

ParallelLayout make_layout(const StrategySpec& s, int nodes, int g, const ModelParallelism& mp) {
  ParallelLayout l;
  l.nodes = nodes;
  l.gpus_per_node = g;
  l.world = nodes * g;
  l.mp = mp;
  l.dp = std::max(1, l.world / (mp.tp * mp.pp));
  switch (s.kind) {
    case StrategyKind::DDP: l.partition_size = 1; break;
    case StrategyKind::Zero1:  // optimizer sharded within groups only with InternEvo's zero1 = p
      l.partition_size = s.partition_size > 0 ? s.partition_size : l.dp;
      break;
    case StrategyKind::Zero2:
    case StrategyKind::Zero3: l.partition_size = l.dp; break;
    case StrategyKind::MiCS:
    case StrategyKind::HSDP:
      l.partition_size = s.partition_size > 0 ? s.partition_size : std::min(std::max(1, g / mp.tp), l.dp);
      break;
  }
  l.replication_size = l.dp / l.partition_size;
  // Hierarchical gather: the group spans nodes with several members on each.
  l.hierarchical = s.kind == StrategyKind::MiCS && s.hierarchical_allgather && l.partition_group_nodes() > 1 &&
                   (mp.none() || l.partition_members_per_node() > 1);
  return l;
}

bool shards_parameters(const StrategySpec& s) {
  // FSDP's SHARD_GRAD_OP shards the parameters too, gathering them per unit in each forward (the
  // profile's step.param_sync: regather_in_forward); DeepSpeed's ZeRO-2 keeps them whole.
  return is_sharded(s.kind) || (s.kind == StrategyKind::Zero2 && s.framework && s.framework->params_regathered_in_forward);
}

int param_shards(const StrategySpec& s, const ParallelLayout& l) {
  if (!shards_parameters(s)) return 1;
  return s.kind == StrategyKind::MiCS || s.kind == StrategyKind::HSDP ? l.partition_size : l.dp;
}

ShardingSpec make_sharding(const StrategySpec& s, const ParallelLayout& l, const Workload& w) {
  ShardingSpec sh;
  const int n = l.dp, p = l.partition_size;
  switch (s.kind) {
    case StrategyKind::DDP: break;
    case StrategyKind::Zero1: sh.optimizer_shards = p; break;  // p = n unless partition groups (InternEvo)
    case StrategyKind::Zero2:
      sh.optimizer_shards = sh.grad_shards = n;
      sh.param_shards = param_shards(s, l);
      sh.gathered_through_backward = sh.param_shards > 1;  // SHARD_GRAD_OP: each unit kept from its forward to its backward
      break;
    case StrategyKind::Zero3:
    case StrategyKind::MiCS:
    case StrategyKind::HSDP: sh.optimizer_shards = sh.grad_shards = sh.param_shards = param_shards(s, l); break;
  }
  sh.gathers_parameters = sh.param_shards > 1;
  // torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy: "default" is
  // `not parallel_dims.pp_enabled` ("for PP, do not reshard after forward to avoid per-microbatch
  // all-gathers"); PyTorch pipelining syncs FSDP gradients only in the last micro-batch's backward.
  sh.unsharded_through_step = sh.gathers_parameters && l.mp.pp > 1 && s.framework && s.framework->family == "fsdp2";
  const double block = double(w.rank_block_params);
  sh.prefetch_units = std::max(1, int(std::floor(s.prefetch_bucket_elements / std::max(1.0, block))));
  sh.max_live_parameters = s.max_live_parameters;
  if (s.reduce_precision) sh.reduce_bytes_per_element = bytes_per_element(*s.reduce_precision);
  if (s.kind == StrategyKind::HSDP) {
    sh.grad_bucket_elements = block;  // FSDP reduces one unit's unsharded gradient at a time
    sh.grad_buckets_in_flight = 2;
    sh.prefetch_units = 1;            // FSDP BACKWARD_PRE / forward_prefetch: one unit ahead
  } else {
    sh.grad_bucket_elements = s.reduce_bucket_elements;
    sh.grad_buckets_in_flight = s.kind == StrategyKind::DDP ? 2 : 1;
  }
  return sh;
}

}  // namespace micsim
