// accelerate.yaml: a Hugging Face accelerate config (ClusterConfig and fsdp_config keys read by
// `accelerate launch` at 1.14.0, validation/data/handoff-apis/accelerate.json). FSDP2 is
// fsdp_version 2; HSDP is parallelism_config (accelerate >= 1.10).
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include "planner/handoff/handoff.hpp"

namespace micsim {

namespace {
// The decoder-layer class Hugging Face transformers uses for each architecture (what FSDP wraps).
const char* layer_class(const ModelSpec& m) {
  switch (m.arch) {
    case Arch::Llama: return "LlamaDecoderLayer";
    case Arch::Bert: return "BertLayer";
    case Arch::Gpt: return "GPT2Block";
  }
  return "LlamaDecoderLayer";
}
}  // namespace

std::string accelerate_yaml(const Scenario& sc, std::vector<std::string>* notes) {
  const auto& s = sc.strategy;
  const ParallelLayout l = make_layout(s, sc.cluster.nodes, sc.cluster.instance.gpus_per_node, sc.parallelism);
  auto note = [&](const std::string& n) {
    if (notes) notes->push_back("accelerate: " + n);
  };
  int replicate = l.replication_size, shard = l.partition_size;
  if (s.kind == StrategyKind::Zero1 || s.kind == StrategyKind::Zero2 || s.kind == StrategyKind::Zero3) replicate = 1, shard = sc.data_parallel_size();
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "compute_environment" << YAML::Value << "LOCAL_MACHINE";
  y << YAML::Key << "distributed_type" << YAML::Value << (s.kind == StrategyKind::DDP ? "MULTI_GPU" : "FSDP");
  const char* mp = sc.training.precision == Precision::FP16 ? "fp16" : sc.training.precision == Precision::FP32 ? "no" : "bf16";
  y << YAML::Key << "mixed_precision" << YAML::Value << mp;
  if (sc.training.fp8) note("fp8 is written as bf16 (accelerate's fp8 needs an fp8_config and Transformer Engine or torchao)");
  y << YAML::Key << "num_machines" << YAML::Value << sc.cluster.nodes;
  y << YAML::Key << "num_processes" << YAML::Value << l.world;
  y << YAML::Key << "machine_rank" << YAML::Value << 0 << YAML::Comment("set to this node's index on each node");
  y << YAML::Key << "main_process_ip" << YAML::Value << "HOST" << YAML::Comment("the first node's address");
  y << YAML::Key << "main_process_port" << YAML::Value << 29500;
  y << YAML::Key << "rdzv_backend" << YAML::Value << "static";
  y << YAML::Key << "same_network" << YAML::Value << true;
  y << YAML::Key << "main_training_function" << YAML::Value << "main";
  y << YAML::Key << "use_cpu" << YAML::Value << false;
  if (s.kind != StrategyKind::DDP) {
    y << YAML::Key << "fsdp_config" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "fsdp_version" << YAML::Value << 2;
    y << YAML::Key << "fsdp_auto_wrap_policy" << YAML::Value << "TRANSFORMER_BASED_WRAP";
    y << YAML::Key << "fsdp_transformer_layer_cls_to_wrap" << YAML::Value << layer_class(sc.model);
    y << YAML::Key << "fsdp_reshard_after_forward" << YAML::Value
      << !(s.kind == StrategyKind::Zero1 || s.kind == StrategyKind::Zero2);
    y << YAML::Key << "fsdp_activation_checkpointing" << YAML::Value << sc.training.activation_checkpointing();
    y << YAML::Key << "fsdp_state_dict_type" << YAML::Value << "SHARDED_STATE_DICT";
    y << YAML::Key << "fsdp_cpu_ram_efficient_loading" << YAML::Value << true;
    y << YAML::Key << "fsdp_offload_params" << YAML::Value << false;
    y << YAML::EndMap;
  }
  if (replicate > 1 && shard > 1) {
    y << YAML::Key << "parallelism_config" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "parallelism_config_dp_replicate_size" << YAML::Value << replicate;
    y << YAML::Key << "parallelism_config_dp_shard_size" << YAML::Value << shard;
    y << YAML::EndMap;
    note("HSDP needs accelerate >= 1.10 (parallelism_config)");
  }
  y << YAML::EndMap;
  if (sc.grad_accumulation_steps() > 1)
    note(fmt::format("gradient accumulation is not a config key: Accelerator(gradient_accumulation_steps={}) in the script, "
                     "micro-batch {} per GPU in its data loader", sc.grad_accumulation_steps(), sc.training.micro_batch));
  if ((s.kind == StrategyKind::MiCS || s.kind == StrategyKind::HSDP) && s.two_hop_sync)
    note("MiCS's deferred all-reduce (reduce-scatter every micro-step, all-reduce once) has no accelerate key; how "
         "accelerator.accumulate() syncs HSDP gradients was not checked");
  if (s.kind == StrategyKind::MiCS && l.hierarchical) note("no hierarchical all-gather: MiCS becomes HSDP");
  if (sc.training.precision == Precision::BF16 && s.reduce_precision && *s.reduce_precision != Precision::BF16)
    note("mixed_precision bf16 also reduces gradients in bf16, not in the simulated strategy.reduce_dtype");
  std::string head = fmt::format("# accelerate {} config written by micsim {} for {} x {} ({} GPUs), {} {}.\n"
                                 "# Launch on each node: accelerate launch --config_file accelerate.yaml --machine_rank RANK train.py\n",
                                 kHandoffAccelerate, MICSIM_VERSION, sc.cluster.nodes, sc.cluster.instance.name, l.world,
                                 sc.model.name, to_string(s.kind));
  return head + y.c_str() + "\n";
}

}  // namespace micsim
