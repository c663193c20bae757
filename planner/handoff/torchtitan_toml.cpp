// torchtitan.toml: a torchtitan job config (keys of torchtitan/config/job_config.py at v0.2.2,
// validation/data/handoff-apis/torchtitan.json). HSDP is data_parallel_replicate_degree x
// data_parallel_shard_degree; torchtitan derives gradient accumulation from global_batch_size.
#include <fmt/format.h>

#include "planner/handoff/handoff.hpp"

namespace micsim {

namespace {

struct Flavor {
  const char* name;
  int layers;
  int64_t hidden;
  int heads, kv_heads;
};
// torchtitan's llama3 flavors (torchtitan/models/llama3/__init__.py at v0.2.2) that a micsim model can match.
const Flavor kLlama3Flavors[] = {{"8B", 32, 4096, 32, 8}, {"70B", 80, 8192, 64, 8}, {"405B", 126, 16384, 128, 8}};

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string torchtitan_toml(const Scenario& sc, std::vector<std::string>* notes) {
  const auto& s = sc.strategy;
  const ParallelLayout l = make_layout(s, sc.cluster.nodes, sc.cluster.instance.gpus_per_node, sc.parallelism);
  const ModelSpec& m = sc.model;
  const ModelParallelism& mpar = sc.parallelism;
  auto note = [&](const std::string& n) {
    if (notes) notes->push_back("torchtitan: " + n);
  };
  // The flavor: the llama3 one with the same shape, else the nearest in size (and say so).
  const Flavor* flavor = nullptr;
  for (const auto& f : kLlama3Flavors)
    if (m.arch == Arch::Llama && m.layers == f.layers && m.hidden == f.hidden && m.heads == f.heads) flavor = &f;
  if (!flavor) {
    flavor = &kLlama3Flavors[0];
    for (const auto& f : kLlama3Flavors)
      if (std::abs(double(f.hidden) * f.layers - double(m.hidden) * m.layers) <
          std::abs(double(flavor->hidden) * flavor->layers - double(m.hidden) * m.layers))
        flavor = &f;
    note(fmt::format("micsim's model {} ({} layers, hidden {}, {} heads) is not a torchtitan llama3 flavor; the config names "
                     "flavor {} -- register a flavor with these sizes (torchtitan/models/llama3/__init__.py) to train it",
                     m.name.empty() ? "(inline)" : m.name, m.layers, m.hidden, m.heads, flavor->name));
  }
  int replicate = l.replication_size, shard = l.partition_size;
  std::string reshard = "default";
  switch (s.kind) {
    case StrategyKind::DDP: replicate = sc.data_parallel_size(), shard = 1; break;
    case StrategyKind::Zero1:
    case StrategyKind::Zero2: replicate = 1, shard = sc.data_parallel_size(), reshard = "never"; break;
    case StrategyKind::Zero3: replicate = 1, shard = sc.data_parallel_size(); break;
    default:
      // micsim's partition group counts data x context parallel ranks; torchtitan shards over
      // dp_shard x cp by itself, so dp_shard is the group divided by cp.
      if (mpar.cp > 1) {
        shard = std::max(1, l.partition_size / mpar.cp);
        replicate = std::max(1, sc.data_parallel_size() / shard);
        if (l.partition_size % mpar.cp != 0)
          note(fmt::format("the partition group ({} ranks) is not a multiple of cp {}: written as dp_shard {}", l.partition_size, mpar.cp, shard));
      }
      break;
  }
  if (s.kind == StrategyKind::Zero1) note("no ZeRO-1: written as sharding without resharding after forward (zero2)");
  if (s.kind == StrategyKind::MiCS && l.hierarchical) note("no hierarchical all-gather: MiCS becomes HSDP (flat gathers in each shard group)");
  if ((s.kind == StrategyKind::MiCS || s.kind == StrategyKind::HSDP) && s.two_hop_sync && sc.grad_accumulation_steps() > 1)
    note("whether torchtitan defers HSDP's all-reduce to the last micro-step was not checked; if not, it all-reduces every micro-step");
  std::string mp = "bfloat16";
  if (sc.training.precision == Precision::FP32) mp = "float32";
  if (sc.training.precision == Precision::FP16) note("fp16 is not a choice of training.mixed_precision_param (bfloat16 | float32): written as bfloat16");
  // torchtitan reduces gradients in float32 only (training.mixed_precision_reduce: Literal["float32"]).
  if (s.reduce_precision.value_or(sc.training.precision) != Precision::FP32)
    note("torchtitan reduces gradients in float32 (its only mixed_precision_reduce); the plan was simulated with 16-bit "
         "reductions: simulate with strategy.reduce_dtype=fp32 to predict this run");
  if (sc.training.fp8)
    note("fp8: torchtitan's float8 training is a model converter ([quantize.linear.float8]); add it as its docs say for v0.2.2");
  if (sc.training.fp8 && s.fp8_all_gather)
    note("fp8_all_gather: set enable_fsdp_float8_all_gather = true and precompute_float8_dynamic_scale_for_fsdp = true in "
         "[quantize.linear.float8] with recipe_name = \"tensorwise\" (torchtitan v0.2.2 job_config.py Float8Linear)");
  std::string ac = "none", ac_option;
  switch (sc.training.checkpointing) {
    case Checkpointing::None: break;
    case Checkpointing::Full: ac = "full"; break;
    case Checkpointing::SelectiveOp:
      ac = "selective", ac_option = "op";
      note("selective-op (recompute the attention core only) has no torchtitan equivalent: written as torchtitan's per-op "
           "policy, which recomputes every other matmul too (simulate activation_checkpointing: torchtitan-op for its prediction)");
      break;
    case Checkpointing::TorchtitanOp: ac = "selective", ac_option = "op"; break;
    case Checkpointing::SelectiveLayer: ac = "selective", ac_option = std::to_string(std::max(1, sc.training.checkpoint_every)); break;
  }
  const int64_t dp = int64_t(replicate) * shard;
  std::string t;
  t += fmt::format("# torchtitan {} job config written by micsim {} for {} x {} ({} GPUs), {} {}.\n", kHandoffTorchtitan,
                   MICSIM_VERSION, sc.cluster.nodes, sc.cluster.instance.name, l.world, m.name, to_string(s.kind));
  t += fmt::format("# Launch on each node: torchrun --nnodes {} --nproc-per-node {} --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\\n"
                   "#     -m torchtitan.train --job.config_file torchtitan.toml\n\n",
                   sc.cluster.nodes, sc.cluster.instance.gpus_per_node);
  t += "[job]\n";
  t += fmt::format("description = {}\n", toml_string(fmt::format("micsim plan: {} {} on {} x {}", m.name, to_string(s.kind),
                                                                 sc.cluster.nodes, sc.cluster.instance.name)));
  t += "dump_folder = \"./outputs\"\n\n";
  t += "[model]\nname = \"llama3\"\n";
  t += fmt::format("flavor = \"{}\"\n", flavor->name);
  t += "hf_assets_path = \"./assets/hf/tokenizer\"  # your tokenizer files\n\n";
  t += "[training]\n";
  t += fmt::format("local_batch_size = {}\n", sc.training.micro_batch);
  t += fmt::format("global_batch_size = {}  # = local_batch_size x {} accumulation steps x {} data-parallel ranks\n",
                   sc.training.micro_batch * sc.grad_accumulation_steps() * dp, sc.grad_accumulation_steps(), dp);
  t += fmt::format("seq_len = {}\n", sc.training.seq_len);
  t += fmt::format("mixed_precision_param = \"{}\"\n", mp);
  t += "mixed_precision_reduce = \"float32\"\n\n";
  // The optimizer update micsim simulated (training.optimizer_implementation; torchtitan's default is fused).
  t += "[optimizer]\n";
  t += fmt::format("implementation = \"{}\"\n\n", to_string(optimizer_implementation_of(sc)));
  t += "[parallelism]\n";
  t += fmt::format("data_parallel_replicate_degree = {}\n", replicate);
  t += fmt::format("data_parallel_shard_degree = {}\n", shard);
  t += fmt::format("fsdp_reshard_after_forward = \"{}\"\n", reshard);
  // torchtitan's TP always shards norms along the sequence (SequenceParallel): micsim's sequence_parallel.
  t += fmt::format("tensor_parallel_degree = {}\n", mpar.tp);
  if (mpar.tp > 1 && mpar.tp_comm_overlap) t += "enable_async_tensor_parallel = true\n";
  t += fmt::format("pipeline_parallel_degree = {}\n", mpar.pp);
  if (mpar.pp > 1) {
    t += fmt::format("pipeline_parallel_schedule = \"{}\"\n", mpar.schedule == PipelineSchedule::GPipe         ? "GPipe"
                                                              : mpar.schedule == PipelineSchedule::Interleaved ? "Interleaved1F1B"
                                                                                                               : "1F1B");
    t += fmt::format("pipeline_parallel_layers_per_stage = {}  # {} layers / ({} stages x {} virtual)\n",
                     m.layers / (mpar.pp * mpar.virtual_stages), m.layers, mpar.pp, mpar.virtual_stages);
    t += fmt::format("pipeline_parallel_microbatch_size = {}\n", sc.training.micro_batch);
  }
  t += fmt::format("context_parallel_degree = {}\n\n", mpar.cp);
  if (mpar.tp > 1 && !mpar.sequence_parallel) note("torchtitan's tensor parallelism always uses sequence parallelism on norms; micsim simulated it without");
  t += fmt::format("[activation_checkpoint]\nmode = \"{}\"\n", ac);
  if (!ac_option.empty()) t += fmt::format("selective_ac_option = \"{}\"\n", ac_option);
  t += fmt::format("\n[compile]\nenable = {}\n", sc.training.compile ? "true" : "false");
  return t;
}

}  // namespace micsim
