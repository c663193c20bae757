#pragma once
// Framework profiles (strategy.framework, strategy.version): the mechanisms by which DeepSpeed, FSDP1,
// FSDP2 and SageMaker SMP really run sharded data parallelism — gather granularity, prefetch, host
// synchronisation, rate limits, copies, reduce bucketing — as data (models/catalog/frameworks.yaml,
// each mechanism with its source; docs/frameworks.md has the full record). The schedule turns a
// profile into tasks; `ideal` is micsim's schedule without any of these effects.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/compute/compute_model.hpp"

namespace micsim {

enum class Granularity { Unit, Tensor, Bucket };

struct FrameworkProfile {
  std::string name;           // ideal | deepspeed-2021 | deepspeed-0.5 | deepspeed | fsdp1 | fsdp2 | smp | internevo
  std::string family;         // ideal | deepspeed | fsdp1 | fsdp2 | smp | internevo (what users write in strategy.framework)
  std::string description;
  std::string first_version, last_version;  // release range ("" = open)
  std::vector<std::string> kinds;           // strategy kinds it runs (empty = all)
  // Gather
  Granularity gather = Granularity::Unit;
  double persistence_threshold = 0;  // elements: smaller tensors stay gathered
  int prefetch_units = -1;           // -1: from stage3_prefetch_bucket_size (DeepSpeed semantics)
  int prefetch_tensors = 0;
  bool device_sync = false;
  bool sync_per_collective = false;
  int max_inflight = 0;
  bool keep_across_turn = true;
  double copy_out = 0;
  // List-form collectives (torch.distributed.all_gather / reduce_scatter with a list of world_size
  // tensors): ProcessGroupNCCL stages them through one flat buffer and copies each rank's piece out
  // (all-gather) or in (reduce-scatter) with its own copy_ on the NCCL stream: n copies per collective.
  bool gather_list_form = false;
  // Reduce
  Granularity reduce = Granularity::Bucket;
  bool bucket_host_wait = false;
  double bucket_copy = 0;
  bool hsdp_allreduce_every_microstep = false;
  bool reduce_list_form = false;  // see gather_list_form
  // ZeRO-1 gradients: each bucket all-reduced over the data-parallel group (every rank keeps the whole
  // reduced gradient and reads its shard) instead of reduce-scattered (InternEvo's reduce_tensor).
  bool grad_all_reduce = false;
  // After the optimizer step (ZeRO-1/2): every rank broadcasts its updated 16-bit shard, one broadcast
  // per rank (InternEvo's broadcast_params), instead of bucketed all-gathers of the whole buffer.
  bool param_broadcast_per_rank = false;
  // ZeRO-2 as FSDP runs it (SHARD_GRAD_OP; FSDP2 reshard_after_forward=False): the parameters stay sharded
  // at rest, each unit is all-gathered before its forward in every micro-batch, kept through that
  // micro-batch's backward and freed after its reduce-scatter, so no gather follows the optimizer step.
  bool params_regathered_in_forward = false;
  // Activation checkpointing: a block checkpointed in full stops its recomputation at the last tensor its
  // backward needs (PyTorch's non-reentrant checkpoint since 2.1; workload.cpp early_stopped_recompute).
  // training.recompute_early_stop overrides it for one run.
  bool recompute_early_stop = false;
  // How AdamW's update runs where the scenario does not say (training.optimizer_implementation): what this
  // framework's users get without setting a flag (torch.optim.AdamW's default on CUDA is foreach).
  OptimizerImplementation optimizer_implementation = OptimizerImplementation::Fused;
  // Host
  double host_per_unit_s = 0;
  double host_per_collective_s = 0;
  std::map<std::string, std::string> sources;  // mechanism -> where it was read

  bool is_ideal() const { return name == "ideal"; }
  // True when the schedule needs a host (CPU) timeline: hook or launch costs, or host-side waits.
  bool models_host() const {
    return host_per_unit_s > 0 || host_per_collective_s > 0 || device_sync || max_inflight > 0 || bucket_host_wait;
  }
};

// The families a user can name, and the profile for a family at a version ("" = its newest).
const std::vector<std::string>& framework_names();
// The strategy kinds some profile of a family runs (empty: every kind).
std::vector<std::string> framework_kinds(const std::string& family);
// Throws std::invalid_argument with a message naming the known versions when none matches.
// The profile lives in the built-in catalog for the whole run.
// `kind` picks among profiles of one release that differ by strategy (the 2021 MiCS prototype).
std::shared_ptr<const FrameworkProfile> resolve_framework(const std::string& family, const std::string& version,
                                                          const std::string& kind = "");

// Compares dotted versions numerically ("0.5.10" > "0.5.4"); "" sorts as the newest.
int compare_versions(const std::string& a, const std::string& b);

}  // namespace micsim
