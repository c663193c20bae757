// megatron_args.sh: the Megatron-LM command-line arguments of a model-parallel configuration (the
// names of megatron/training/arguments.py in NVIDIA/Megatron-LM core_r0.x: --tensor-model-parallel-size,
// --pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage, --context-parallel-size,
// --sequence-parallel, --use-distributed-optimizer, --recompute-granularity / --recompute-method).
#include <fmt/format.h>

#include "planner/handoff/handoff.hpp"
#include "sim/strategy/strategy.hpp"

namespace micsim {

std::string megatron_args(const Scenario& sc, std::vector<std::string>* notes) {
  const ModelParallelism& mp = sc.parallelism;
  const ModelSpec& m = sc.model;
  const TrainingSpec& t = sc.training;
  auto note = [&](const std::string& n) {
    if (notes) notes->push_back("Megatron-LM: " + n);
  };
  std::string a;
  a += fmt::format("# Megatron-LM arguments written by micsim {} for {} x {} ({} GPUs): {} + {}.\n", MICSIM_VERSION, sc.cluster.nodes,
                   sc.cluster.instance.name, sc.world_size(), describe(mp), to_string(sc.strategy.kind));
  a += fmt::format("# Launch on each node: torchrun --nnodes {} --nproc-per-node {} --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\\n"
                   "#     pretrain_gpt.py \"${{MEGATRON_ARGS[@]}}\" (plus your data, tokenizer and checkpoint arguments)\n",
                   sc.cluster.nodes, sc.cluster.instance.gpus_per_node);
  a += "MEGATRON_ARGS=(\n";
  auto arg = [&](const std::string& s) { a += "  " + s + "\n"; };
  arg(fmt::format("--tensor-model-parallel-size {}", mp.tp));
  arg(fmt::format("--pipeline-model-parallel-size {}", mp.pp));
  if (mp.virtual_stages > 1) arg(fmt::format("--num-layers-per-virtual-pipeline-stage {}", m.layers / (mp.pp * mp.virtual_stages)));
  if (mp.cp > 1) arg(fmt::format("--context-parallel-size {}", mp.cp));
  if (mp.sequence_parallel && mp.tp > 1) arg("--sequence-parallel");
  if (mp.tp_comm_overlap && mp.tp > 1) arg("--tp-comm-overlap");
  arg(fmt::format("--num-layers {}", m.layers));
  arg(fmt::format("--hidden-size {}", m.hidden));
  arg(fmt::format("--ffn-hidden-size {}", m.ffn));
  arg(fmt::format("--num-attention-heads {}", m.heads));
  if (m.kv_heads != m.heads) arg("--group-query-attention"), arg(fmt::format("--num-query-groups {}", m.kv_heads));
  if (m.gated_mlp()) arg("--swiglu");
  if (m.max_position == 0) arg("--position-embedding-type rope");
  if (m.rms_norm) arg("--normalization RMSNorm");
  if (!m.biases) arg("--disable-bias-linear");
  if (!m.tied_embeddings) arg("--untie-embeddings-and-output-weights");
  arg(fmt::format("--seq-length {}", t.seq_len));
  arg(fmt::format("--max-position-embeddings {}", std::max<int64_t>(t.seq_len, m.max_position)));
  arg(fmt::format("--micro-batch-size {}", t.micro_batch));
  arg(fmt::format("--global-batch-size {}", t.global_batch));
  arg(t.precision == Precision::FP16 ? "--fp16" : t.precision == Precision::BF16 ? "--bf16" : "# fp32: no precision flag");
  if (t.flash_attention) arg("--use-flash-attn");
  switch (t.checkpointing) {
    case Checkpointing::None: break;
    case Checkpointing::Full: arg("--recompute-granularity full"), arg("--recompute-method uniform"), arg("--recompute-num-layers 1"); break;
    case Checkpointing::SelectiveOp: arg("--recompute-granularity selective"); break;
    case Checkpointing::TorchtitanOp:
      arg("--recompute-granularity selective");
      note("torchtitan-op (torchtitan's per-op policy) has no Megatron-LM equivalent: written as selective (attention-core) recomputation");
      break;
    case Checkpointing::SelectiveLayer:
      arg("--recompute-granularity full"), arg("--recompute-method block");
      note(fmt::format("selective-layer (every {}th block) is written as block recompute; set --recompute-num-layers to the "
                       "number of blocks per stage to checkpoint", t.checkpoint_every));
      break;
  }
  switch (sc.strategy.kind) {
    case StrategyKind::DDP: break;
    case StrategyKind::Zero1: arg("--use-distributed-optimizer"); break;
    default:
      note(fmt::format("Megatron-LM shards no parameters over data-parallel ranks in this configuration ({} was simulated); "
                       "the closest is --use-distributed-optimizer (ZeRO-1), or torchtitan's FSDP2 + TP/PP (torchtitan.toml)",
                       to_string(sc.strategy.kind)));
      arg("--use-distributed-optimizer");
  }
  if (sc.data_parallel_size() > 1) arg("--overlap-grad-reduce");
  a += ")\n";
  return a;
}

}  // namespace micsim
