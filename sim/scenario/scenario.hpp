#pragma once
// A scenario: the cluster, the model, how it is trained, and with which strategy. Loaded from YAML
// (keys are a contract, see README "Scenario reference"), with `--set key.path=value` overrides.
#include <optional>
#include <string>
#include <vector>

#include "models/calibration/calibration.hpp"
#include "models/compute/compute_model.hpp"
#include "models/hardware/hardware.hpp"
#include "models/hardware/topology.hpp"
#include "models/workload/model_spec.hpp"
#include "sim/strategy/strategy.hpp"

namespace micsim {

enum class EngineKind { Analytic, SimGrid };
const char* to_string(EngineKind e);

struct FabricOptions {
  double oversubscription = 1.0;   // leaf-to-spine oversubscription of the fat tree (>= 1)
  int nodes_per_leaf = 16;         // nodes under one leaf (top-of-rack) switch
  bool scattered = true;           // cloud placement: consecutive nodes on different leaves
};

// What-if knobs (honoured by the simgrid engine; the analytic engine warns and ignores them).
struct SlowNode {
  int node = 0;
  double compute_factor = 1.0;     // compute takes this many times longer on that node (>= 1)
};
struct WhatIf {
  std::vector<SlowNode> slow_nodes;
  std::vector<Degradation> degraded;
  // Seed of the SimGrid engine's per-node jitter draws (absent: micsim's fixed seed). One seed is one
  // draw of which nodes run slow; a few seeds show how much a result depends on it.
  std::optional<uint64_t> jitter_seed;
  bool empty() const { return slow_nodes.empty() && degraded.empty() && !jitter_seed; }
};

struct ClusterSpec {
  InstanceSpec instance;
  int nodes = 1;
  FabricOptions fabric;
  int world_size() const { return nodes * instance.gpus_per_node; }
};

struct TrainingSpec {
  int64_t seq_len = 512;
  int64_t micro_batch = 1;
  int64_t global_batch = 1;
  int64_t requested_accumulation_steps = 0;  // when given instead of global_batch
  Precision precision = Precision::FP16;     // parameters, activations, gradients, collectives
  bool fp8 = false;                          // precision: fp8 -> block GEMMs in FP8 (Transformer Engine / torchao float8), rest bf16
  bool compile = false;                      // torch.compile: fused elementwise kernels, fewer launches
  Fp8Recipe fp8_recipe = Fp8Recipe::Dynamic; // fp8: how scales are found (WorkloadOptions::fp8_recipe)
  Checkpointing checkpointing = Checkpointing::None;
  int checkpoint_every = 1;                  // selective-layer: every k-th block is checkpointed
  std::optional<bool> recompute_early_stop;  // absent: the framework profile's (models/catalog/frameworks.yaml)
  bool activation_checkpointing() const { return checkpointing != Checkpointing::None; }
  Optimizer optimizer = Optimizer::Adam;
  std::optional<OptimizerImplementation> optimizer_implementation;  // training.optimizer_implementation; absent: optimizer_implementation_of
  bool flash_attention = false;   // default: true on Ampere and newer, false on Volta
  AttentionKernel attention_kernel = AttentionKernel::FA2;  // which fused kernel (training.attention_kernel)
  bool fused_kernels = true;      // false: minGPT-style eager code (decomposed GELU, eager attention)
  bool eager_attention = false;   // materialised attention as eager PyTorch ops (HF / NVIDIA BERT, bing_bert)
  CrossEntropy cross_entropy = CrossEntropy::Fused;  // how the loss is computed (its memory: see CrossEntropy)
  bool logits_kept_through_backward = false;         // the trainer holds the logits until the step ends (Composer)
};

struct Scenario {
  std::string name;
  std::string file;                // where it was loaded from ("" for built in code)
  ClusterSpec cluster;
  ModelSpec model;
  TrainingSpec training;
  StrategySpec strategy;            // applies to the data-parallel dimension
  ModelParallelism parallelism;     // tp / pp / cp (scenario key `parallelism`); all 1 by default
  WhatIf what_if;
  EngineKind engine = EngineKind::Analytic;
  Calibration calibration;         // empty when none
  std::vector<std::string> warnings;  // keys ignored for this strategy, etc.
  std::vector<std::string> input_files;  // every file it was loaded from (scenario, HF config, calibration)

  int world_size() const { return cluster.world_size(); }
  int data_parallel_size() const { return world_size() / parallelism.model_parallel_size(); }
  // Micro-batches each data-parallel rank (each pipeline) runs per step.
  int64_t grad_accumulation_steps() const { return training.global_batch / (training.micro_batch * data_parallel_size()); }
};

// A change to one scenario key, "key.path=value", and where it came from: errors about that key name
// the origin ("--set key=value" for the command line, "ds_config.json:12 (train_batch_size)" for a
// value read from a DeepSpeed config), never a line of the scenario file or a --set nobody typed.
struct Override {
  std::string assignment;  // key.path=value
  std::string origin;      // shown in messages
  Override(std::string a) : assignment(std::move(a)), origin("--set " + assignment) {}  // NOLINT: implicit on purpose
  Override(std::string a, std::string o) : assignment(std::move(a)), origin(std::move(o)) {}
};

// How the optimizer's update runs: training.optimizer_implementation where given, else the framework
// profile's default (what that framework runs without a flag), else fused. Only Adam has a multi-tensor
// cost; LAMB and SGD run fused whatever the profile says.
OptimizerImplementation optimizer_implementation_of(const Scenario& sc);
// Where that came from, for the report's sources.
const char* optimizer_implementation_origin(const Scenario& sc);

// Loads and validates a scenario; every error is an InputError (file:line:col, key, expectation).
// `sets` are the user's --set overrides, `more` overrides from other inputs (applied after them).
Scenario load_scenario(const std::string& path, const std::vector<std::string>& sets = {},
                       const std::vector<Override>& more = {});
Scenario parse_scenario_text(const std::string& yaml, const std::string& shown_name,
                             const std::vector<std::string>& sets = {}, const std::vector<Override>& more = {});

// Applies overrides to a YAML tree; records their origins so errors point at them.
void apply_overrides(YAML::Node& root, const std::vector<Override>& overrides, YamlSource& src);

}  // namespace micsim
