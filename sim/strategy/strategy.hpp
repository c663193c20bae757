#pragma once
// Sharded data-parallel strategies and the communicator groups they create.
//   ddp    replicate everything; all-reduce gradients at the accumulation boundary
//   zero1  shard optimizer states over all N GPUs
//   zero2  shard optimizer states and gradients over N
//   zero3  shard everything over N; gather parameters per unit (FSDP FULL_SHARD is the same)
//   mics   shard everything inside partition groups of p GPUs; hierarchical all-gather when a group
//          spans nodes; 2-hop gradient sync (reduce-scatter in the group every micro-step, all-reduce
//          across replication groups once per step)
//   hsdp   FSDP HYBRID_SHARD: shard inside groups of p, all-reduce across groups every micro-step
//          (FSDP1) unless two_hop_sync (FSDP2 set_requires_all_reduce(False) during accumulation)
#include <optional>
#include <string>
#include <vector>

#include "models/collective/collective.hpp"
#include "models/framework/framework.hpp"
#include "models/memory/memory_model.hpp"

namespace micsim {

enum class StrategyKind { DDP, Zero1, Zero2, Zero3, MiCS, HSDP };
const char* to_string(StrategyKind k);
std::optional<StrategyKind> parse_strategy_kind(const std::string& s);
// Parameters sharded (ZeRO-3, MiCS, HSDP): the error bands' "sharded" family.
inline bool is_sharded(StrategyKind k) { return k == StrategyKind::Zero3 || k == StrategyKind::MiCS || k == StrategyKind::HSDP; }
const std::vector<std::string>& strategy_kind_names();

struct StrategySpec {
  StrategyKind kind = StrategyKind::MiCS;
  int partition_size = 0;                // mics/hsdp; 0 = GPUs per node
  bool hierarchical_allgather = true;    // mics: 3-step gather when the group spans nodes
  bool two_hop_sync = true;              // mics (default true) / hsdp (default false)
  double reduce_bucket_elements = 5e8;   // DeepSpeed reduce_bucket_size; DDP: bucket_cap_mb
  double prefetch_bucket_elements = 5e7; // DeepSpeed stage3_prefetch_bucket_size
  double max_live_parameters = 1e9;      // DeepSpeed stage3_max_live_parameters
  std::shared_ptr<const FrameworkProfile> framework = resolve_framework("ideal", "");  // how the implementation runs it
  std::string framework_version;         // as the user gave it ("" = the family's newest)
  bool contiguous_gradients = true;      // DeepSpeed: false reduces with flatten + all-reduce (2x bytes)
  double persistence_threshold = -1;     // stage3_param_persistence_threshold (elements); -1 = the framework's
  // Gradient reductions (reduce-scatter, replication and DDP all-reduces) in this precision, as FSDP's
  // MixedPrecision(Policy).reduce_dtype sets it; unset = the training precision (16-bit gradients).
  std::optional<Precision> reduce_precision;
  // FP8 all-gather of the blocks' linear weights (training.precision fp8): torchao float8's
  // enable_fsdp_float8_all_gather under FSDP2, Megatron-FSDP's fp8_param_gather. Each rank casts its
  // shard to FP8 before the gather, so the wire and the gathered buffer carry 1 byte per weight and the
  // GEMMs skip their per-use weight cast.
  bool fp8_all_gather = false;
};

// Where the ranks of each kind of group sit. Groups are contiguous: partition groups
// [0..p-1], [p..2p-1], ...; replication groups {i, i+p, i+2p, ...}. With model parallelism these are
// positions among the ranks that hold the same parameters: the data- and context-parallel ranks
// (context-parallel ranks split the sequence, not the model, so their gradients are reduced and their
// model states sharded together, as Megatron-LM's data-parallel-with-context group and torchtitan's
// dp_shard x cp FSDP mesh do), tp GPUs apart in Megatron's rank order (tp, cp, dp, pp).
struct ParallelLayout {
  int world = 1, gpus_per_node = 1, nodes = 1;
  int dp = 1;                // ranks holding the same parameters: data x context parallel (world without model parallelism)
  ModelParallelism mp;
  int partition_size = 1;    // GPUs sharing one copy of the model states
  int replication_size = 1;  // copies of the model states (dp / p)
  bool hierarchical = false; // MiCS hierarchical all-gather in use
  GroupLayout world_group() const;        // all ranks holding the same parameters
  GroupLayout partition_group() const;
  GroupLayout replication_group() const;
  GroupLayout tensor_group() const;
  GroupLayout context_group() const;
  GroupLayout pipeline_pair() const;      // a stage and its neighbour
  int partition_group_nodes() const;      // nodes one partition group spans
  int partition_members_per_node() const; // members of one partition group on one of its nodes
  // `ranks` ranks `stride` GPUs apart, as many per node as fit, and how many such groups share a node.
  GroupLayout strided(int ranks, int stride) const;
};

ParallelLayout make_layout(const StrategySpec& s, int nodes, int gpus_per_node, const ModelParallelism& mp = {});
ShardingSpec make_sharding(const StrategySpec& s, const ParallelLayout& l, const Workload& w);
// The GPUs one parameter is sharded over: ZeRO-3 (and ZeRO-2 under FSDP, SHARD_GRAD_OP) all data-parallel ranks,
// MiCS/HSDP the partition group, 1 for the strategies that keep whole parameters. More than 1: parameters are
// gathered before use.
int param_shards(const StrategySpec& s, const ParallelLayout& l);
// Whether the strategy, as its framework runs it, shards parameters (and so gathers them before use).
bool shards_parameters(const StrategySpec& s);

}  // namespace micsim
