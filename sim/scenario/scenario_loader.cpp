#include <fmt/format.h>

#include <filesystem>
#include <functional>

#include "models/collective/collective.hpp"
#include "models/hardware/catalog.hpp"
#include "models/hardware/power_limit.hpp"
#include "models/io/input_file.hpp"
#include "sim/scenario/scenario.hpp"

namespace micsim {

const char* to_string(EngineKind e) { return e == EngineKind::Analytic ? "analytic" : "simgrid"; }

namespace {

std::string resolve_relative(const std::string& base_file, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::path(path).is_absolute() || base_file.empty() || base_file.rfind("--set", 0) == 0)
    return path;
  fs::path candidate = fs::path(base_file).parent_path() / path;
  if (fs::exists(candidate) || !fs::exists(path)) return candidate.lexically_normal().string();
  return path;
}

ClusterSpec parse_cluster(const YamlNode& n) {
  n.check_keys({"instance", "nodes", "fabric", "gpu_power_limit_w", "nccl_proto", "nccl_choice", "collnet"});
  ClusterSpec c;
  const auto& cat = HardwareCatalog::builtin();
  YamlNode inst = n.at("instance");
  if (inst.is_map()) {
    c.instance = cat.parse_instance(inst, "inline-instance");
  } else {
    std::string name = inst.as_string();
    const InstanceSpec* spec = cat.find_instance(name);
    if (!spec) {
      std::string hint = closest_match(name, cat.instance_names());
      inst.fail(fmt::format("unknown instance '{}'{}; known: {}", name,
                            hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                            join_choices(cat.instance_names())));
    }
    c.instance = *spec;
  }
  c.nodes = static_cast<int>(n.at("nodes").as_int_in(1, 1 << 20));
  // NCCL_PROTO for this cluster's processes, in place of what the instance's network plugin sets ("" = all).
  if (auto p = n.get("nccl_proto")) {
    c.instance.nccl_proto = p->as_string();
    if (!parse_nccl_proto(c.instance.nccl_proto))
      p->fail(fmt::format("'{}': {}, or \"\" for all", c.instance.nccl_proto, kNcclProtoExpected));
  }
  // Who picks algorithm and protocol: NCCL from its own model (what runs), or a what-if tuner that takes
  // the fastest on this network's measured costs.
  if (auto p = n.get("nccl_choice")) c.instance.choose_fastest = p->as_choice({"nccl", "fastest"}) == "fastest";
  // In-network reduction (SHARP switches, the CollNet plugin and NCCL_COLLNET_ENABLE=1) on this cluster, or not.
  if (auto p = n.get("collnet")) {
    c.instance.network.collnet = p->as_bool();
    if (std::string why = collnet_problem(c.instance.network); !why.empty()) p->fail(why);
  }
  // Every GPU of the cluster run under this limit (nvidia-smi -pl), in place of the part's default.
  if (auto p = n.get("gpu_power_limit_w")) {
    const double w = p->as_double_in(1, 1e5);
    if (std::string why = power_limit_problem(c.instance.gpu, w); !why.empty()) p->fail(why);
    c.instance.gpu.power_limit_w = w;
  }
  if (auto f = n.get("fabric")) {
    f->check_keys({"oversubscription", "nodes_per_leaf", "placement"});
    if (auto o = f->get("oversubscription")) c.fabric.oversubscription = o->as_double_in(1.0, 1024.0);
    if (auto o = f->get("nodes_per_leaf")) c.fabric.nodes_per_leaf = static_cast<int>(o->as_int_in(1, 1 << 16));
    if (auto o = f->get("placement")) c.fabric.scattered = o->as_choice({"scattered", "packed"}) == "scattered";
  }
  return c;
}

const std::vector<std::string> kInlineModelKeys = {"arch", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab",
                                                   "max_position", "type_vocab", "tied_embeddings", "encoder_head",
                                                   "dropout", "biases", "source"};

ModelSpec parse_model(const YamlNode& n, std::vector<std::string>& inputs) {
  auto preset_named = [](const YamlNode& node) {
    std::string name = node.as_string();
    const ModelSpec* m = find_model_preset(name);
    if (!m) {
      std::string hint = closest_match(name, model_preset_names());
      node.fail(fmt::format("unknown model preset '{}'{}; known: {}", name,
                            hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                            join_choices(model_preset_names())));
    }
    return *m;
  };
  if (n.is_scalar()) return preset_named(n);
  std::vector<std::string> allowed = kInlineModelKeys;
  allowed.push_back("preset");
  allowed.push_back("hf_config");
  n.check_keys(allowed);
  if (n.has("preset") && n.has("hf_config")) n.at("hf_config").fail("give either preset or hf_config, not both");
  if (!n.has("preset") && !n.has("hf_config")) return parse_model_mapping(n, "inline-model");

  std::string hf_path;
  if (n.has("hf_config")) {
    hf_path = resolve_relative(n.at("hf_config").location().file, n.at("hf_config").as_string());
    inputs.push_back(hf_path);
  }
  ModelSpec m = n.has("preset") ? preset_named(n.at("preset")) : load_hf_config(hf_path);
  // Inline keys next to a preset or HF config adjust it (what-if: `--set model.layers=64`).
  bool adjusted = false;
  for (const auto& key : kInlineModelKeys) {
    if (!n.has(key)) continue;
    adjusted = true;
    if (key == "arch") n.at(key).fail("the architecture of a preset or HF config cannot be changed");
    if (key == "source") continue;
    auto v = n.at(key);
    if (key == "layers") m.layers = static_cast<int>(v.as_int_in(1, 100000));
    else if (key == "hidden") m.hidden = v.as_int_in(1, 1 << 20);
    else if (key == "heads") m.heads = static_cast<int>(v.as_int_in(1, 1 << 16));
    else if (key == "kv_heads") m.kv_heads = static_cast<int>(v.as_int_in(1, 1 << 16));
    else if (key == "ffn") m.ffn = v.as_int_in(1, 1 << 24);
    else if (key == "vocab") m.vocab = v.as_int_in(1, 1 << 24);
    else if (key == "max_position") m.max_position = v.as_int_in(0, 1 << 24);
    else if (key == "type_vocab") m.type_vocab = static_cast<int>(v.as_int_in(0, 1 << 16));
    else if (key == "tied_embeddings") m.tied_embeddings = v.as_bool();
    else if (key == "dropout") m.dropout = v.as_bool();
    else if (key == "biases") m.biases = v.as_bool();
    else if (key == "encoder_head") {
      if (m.arch != Arch::Bert) v.fail("encoder_head applies to arch: bert only");
      std::string h = v.as_choice({"mlm+nsp", "mlm", "none"});
      m.encoder_head = h == "mlm+nsp" ? EncoderHead::MlmNsp : h == "mlm" ? EncoderHead::Mlm : EncoderHead::None;
    }
  }
  if (adjusted) {
    validate_model(m, n);
    m.name += " (adjusted)";
  }
  return m;
}

TrainingSpec parse_training(const YamlNode& n, const GpuSpec& gpu) {
  n.check_keys({"seq_len", "micro_batch", "global_batch", "grad_accumulation_steps", "precision", "activation_checkpointing",
                "checkpoint_every", "optimizer", "optimizer_implementation", "flash_attention", "fused_kernels", "eager_attention", "compile", "cross_entropy",
                "logits_kept_through_backward", "attention_kernel", "recompute_early_stop", "fp8_recipe"});
  TrainingSpec t;
  t.seq_len = n.at("seq_len").as_int_in(1, 1 << 22);
  t.micro_batch = n.at("micro_batch").as_int_in(1, 1 << 20);
  // The global batch, or the accumulation steps it follows from (global = micro_batch x GPUs x steps).
  if (n.has("global_batch") && n.has("grad_accumulation_steps"))
    n.at("grad_accumulation_steps").fail("give global_batch or grad_accumulation_steps, not both");
  if (n.has("grad_accumulation_steps")) t.requested_accumulation_steps = n.at("grad_accumulation_steps").as_int_in(1, 1 << 20);
  else t.global_batch = n.at("global_batch").as_int_in(1, int64_t(1) << 40);
  if (auto p = n.get("precision")) {
    std::string s = p->as_choice({"fp16", "bf16", "fp32", "fp8"});
    // fp8: the blocks' GEMMs in FP8 with dynamic scaling; parameters, activations and the rest in bf16.
    t.fp8 = s == "fp8";
    t.precision = t.fp8 ? Precision::BF16 : *parse_precision(s);
    if (t.fp8 && gpu.peak_fp8_flops <= 0)
      p->fail(fmt::format("fp8 needs FP8 tensor cores (Hopper or newer); {} has none", gpu.name));
    if (!gpu.supports(t.precision))
      p->fail(fmt::format("{} is not supported by {} (supported: {})", s, gpu.name,
                          gpu.supports(Precision::BF16) ? "fp16 | bf16 | fp32" : "fp16 | fp32"));
  }
  if (auto a = n.get("activation_checkpointing")) {
    // true / false are full / none (earlier scenarios); the policies by name.
    const std::string v = a->is_scalar() ? a->raw().Scalar() : "";
    if (v == "true" || v == "false" || v == "True" || v == "False" || v == "yes" || v == "no" || v == "on" || v == "off")
      t.checkpointing = a->as_bool() ? Checkpointing::Full : Checkpointing::None;
    else {
      const std::string c = a->as_choice({"none", "full", "selective-op", "selective-layer", "torchtitan-op", "true", "false"});
      t.checkpointing = c == "full" ? Checkpointing::Full : c == "selective-op" ? Checkpointing::SelectiveOp
                        : c == "selective-layer" ? Checkpointing::SelectiveLayer : c == "torchtitan-op" ? Checkpointing::TorchtitanOp
                        : Checkpointing::None;
    }
  }
  if (auto k = n.get("checkpoint_every")) {
    if (t.checkpointing != Checkpointing::SelectiveLayer) k->fail("checkpoint_every applies to activation_checkpointing: selective-layer");
    t.checkpoint_every = int(k->as_int_in(1, 1 << 16));
  }
  if (auto c = n.get("compile")) t.compile = c->as_bool();
  if (auto r = n.get("recompute_early_stop")) t.recompute_early_stop = r->as_bool();
  if (auto r = n.get("fp8_recipe")) {
    if (!t.fp8) r->fail("fp8_recipe applies to precision: fp8");
    t.fp8_recipe = r->as_choice({"dynamic", "delayed"}) == "delayed" ? Fp8Recipe::Delayed : Fp8Recipe::Dynamic;
  }
  if (auto c = n.get("cross_entropy")) {
    const std::string ce = c->as_choice({"fused", "torch", "compiled"});
    t.cross_entropy = ce == "torch" ? CrossEntropy::Torch : ce == "compiled" ? CrossEntropy::Compiled : CrossEntropy::Fused;
  }
  if (auto k = n.get("logits_kept_through_backward")) t.logits_kept_through_backward = k->as_bool();
  if (auto o = n.get("optimizer")) {
    // adamw: the same state (two moments + fp32 master) and the same per-element work as adam.
    std::string s = o->as_choice({"adam", "adamw", "lamb", "sgd"});
    t.optimizer = (s == "adam" || s == "adamw") ? Optimizer::Adam : s == "lamb" ? Optimizer::Lamb : Optimizer::Sgd;
  }
  if (auto i = n.get("optimizer_implementation")) {
    // foreach: torch.optim.Adam/AdamW's multi-tensor path (its default on CUDA); fused: one kernel.
    if (i->as_choice({"fused", "foreach"}) == "foreach") {
      if (t.optimizer != Optimizer::Adam)
        i->fail("foreach is modelled for adam / adamw (torch.optim's multi-tensor AdamW); lamb and sgd run fused here");
      t.optimizer_implementation = OptimizerImplementation::Foreach;
    } else {
      t.optimizer_implementation = OptimizerImplementation::Fused;
    }
  }
  // FlashAttention needs Ampere or newer; it is what current stacks use there.
  t.flash_attention = gpu.arch >= GpuArch::Ampere;
  if (auto f = n.get("fused_kernels")) t.fused_kernels = f->as_bool();
  if (auto f = n.get("flash_attention")) {
    t.flash_attention = f->as_bool();
    if (t.flash_attention && gpu.arch < GpuArch::Ampere)
      f->fail(fmt::format("FlashAttention needs an Ampere or newer GPU; {} is {}", gpu.name, to_string(gpu.arch)));
  }
  if (auto f = n.get("eager_attention")) {
    t.eager_attention = f->as_bool();
    if (t.eager_attention && t.flash_attention)
      f->fail("eager attention materialises the s x s scores: set training.flash_attention: false with it");
  }
  if (auto k = n.get("attention_kernel")) {
    const std::string name = k->as_choice({"fa2", "fa3", "cudnn", "triton"});
    for (AttentionKernel a : {AttentionKernel::FA2, AttentionKernel::FA3, AttentionKernel::CuDNN, AttentionKernel::Triton})
      if (name == to_string(a)) t.attention_kernel = a;
    if (!t.flash_attention) k->fail("a fused attention kernel needs flash_attention: true (materialised attention runs as batched GEMMs)");
    // FlashAttention-3 is written for Hopper's wgmma and TMA (flash-attn hopper/ builds for sm90 only).
    if (t.attention_kernel == AttentionKernel::FA3 && gpu.arch != GpuArch::Hopper)
      k->fail(fmt::format("fa3 (FlashAttention-3) runs on Hopper GPUs only; {} is {}", gpu.name, to_string(gpu.arch)));
  }
  return t;
}

// strategy.framework and strategy.version: which implementation runs the strategy, and whether it can.
void parse_framework(const YamlNode& n, StrategySpec& s) {
  std::string family = "ideal", version;
  if (auto f = n.get("framework")) family = f->as_choice(framework_names());
  if (auto v = n.get("version")) {
    version = v->as_string();
    if (family == "ideal") v->fail("a version applies to a real framework: set strategy.framework (deepspeed, fsdp1, fsdp2, smp)");
  }
  try {
    s.framework = resolve_framework(family, version, to_string(s.kind));
  } catch (const std::invalid_argument& e) {
    (n.has("version") ? n.at("version") : n.at("kind")).fail(e.what());
  }
  s.framework_version = version;
  const std::string kind = to_string(s.kind);
  auto refuse = [&](const std::string& why) { n.at("kind").fail(fmt::format("{} under framework {}: {}", kind, family, why)); };
  if (family == "deepspeed" && s.kind == StrategyKind::HSDP)
    refuse("DeepSpeed has no HYBRID_SHARD; its hierarchical sharding is kind: mics (mics_shard_size)");
  if ((family == "fsdp1" || family == "fsdp2") && s.kind == StrategyKind::MiCS)
    refuse("PyTorch FSDP has no MiCS hierarchical all-gather; use kind: hsdp (HYBRID_SHARD; with fsdp2, two_hop_sync: true defers the all-reduce as MiCS does)");
  if ((family == "fsdp1" || family == "fsdp2") && s.kind == StrategyKind::Zero1)
    refuse("PyTorch FSDP shards parameters or gradients too; use zero2 (SHARD_GRAD_OP) or zero3 (FULL_SHARD)");
  if (family == "fsdp1" && s.kind == StrategyKind::HSDP && s.two_hop_sync) {
    auto t = n.get("two_hop_sync");
    (t ? *t : n.at("kind")).fail("FSDP1 HYBRID_SHARD all-reduces in every backward (no deferral); use framework fsdp2 for two_hop_sync");
  }
  if (family == "smp" && s.kind != StrategyKind::MiCS && s.kind != StrategyKind::Zero3 && s.kind != StrategyKind::DDP)
    refuse("SageMaker sharded data parallelism (v1) is MiCS: use kind mics (or zero3 for a degree of all GPUs); SMP v2 is FSDP-based (framework fsdp1)");
  if (auto v = n.get("persistence_threshold")) s.persistence_threshold = v->as_double_in(0, 1e12);
  // strategy.mechanisms: what-if changes to the profile ("DeepSpeed 0.5 without the synchronize").
  if (auto m = n.get("mechanisms")) {
    m->check_keys({"gather_granularity", "prefetch_units", "prefetch_tensors", "device_sync", "sync_per_collective", "max_inflight",
                   "copy_out", "reduce_granularity", "bucket_host_wait", "bucket_copy", "host_per_unit_us", "host_per_collective_us",
                   "gather_list_form", "reduce_list_form"});
    auto f = std::make_shared<FrameworkProfile>(*s.framework);
    auto granularity = [](const YamlNode& v) {
      const std::string g = v.as_choice({"unit", "tensor", "bucket"});
      return g == "unit" ? Granularity::Unit : g == "tensor" ? Granularity::Tensor : Granularity::Bucket;
    };
    if (auto v = m->get("gather_granularity")) f->gather = granularity(*v);
    if (auto v = m->get("prefetch_units")) f->prefetch_units = int(v->as_int_in(-1, 64));
    if (auto v = m->get("prefetch_tensors")) f->prefetch_tensors = int(v->as_int_in(0, 64));
    if (auto v = m->get("device_sync")) f->device_sync = v->as_bool();
    if (auto v = m->get("sync_per_collective")) f->sync_per_collective = v->as_bool();
    if (auto v = m->get("max_inflight")) f->max_inflight = int(v->as_int_in(0, 64));
    if (auto v = m->get("copy_out")) f->copy_out = v->as_double_in(0, 4);
    if (auto v = m->get("gather_list_form")) f->gather_list_form = v->as_bool();
    if (auto v = m->get("reduce_list_form")) f->reduce_list_form = v->as_bool();
    if (auto v = m->get("reduce_granularity")) f->reduce = granularity(*v);
    if (auto v = m->get("bucket_host_wait")) f->bucket_host_wait = v->as_bool();
    if (auto v = m->get("bucket_copy")) f->bucket_copy = v->as_double_in(0, 4);
    if (auto v = m->get("host_per_unit_us")) f->host_per_unit_s = v->as_double_in(0, 1e6) * 1e-6;
    if (auto v = m->get("host_per_collective_us")) f->host_per_collective_s = v->as_double_in(0, 1e6) * 1e-6;
    f->name += " (mechanisms changed)";
    s.framework = f;
  }
  if (auto v = n.get("contiguous_gradients")) {
    if (family != "deepspeed") v->fail("contiguous_gradients is a DeepSpeed setting (framework: deepspeed)");
    s.contiguous_gradients = v->as_bool();
  }
}

// parallelism: {tp, pp, cp, virtual_stages, schedule, sequence_parallel}. Shape errors name the key to
// change: heads by tp, layers by pp x virtual_stages, sequence by cp, GPUs by tp x pp x cp.
ModelParallelism parse_parallelism(const YamlNode& n, const ClusterSpec& c, const ModelSpec& model, const TrainingSpec& t,
                                   std::vector<std::string>& warnings) {
  n.check_keys({"tp", "pp", "cp", "virtual_stages", "schedule", "sequence_parallel", "tp_comm_overlap", "tp_backward_overlap"});
  ModelParallelism mp;
  const int world = c.world_size(), g = c.instance.gpus_per_node;
  if (auto v = n.get("tp")) {
    mp.tp = int(v->as_int_in(1, world));
    if (model.heads % mp.tp != 0 || model.kv_heads % mp.tp != 0)
      v->fail(fmt::format("a divisor of the model's {} attention heads and {} key/value heads, got {}", model.heads, model.kv_heads, mp.tp));
    // (The vocabulary need not divide: Megatron-LM pads it to a multiple of 128·tp.)
    if (model.ffn % mp.tp != 0) v->fail(fmt::format("a divisor of the FFN width {}, got {}", model.ffn, mp.tp));
    if (mp.tp > g)
      warnings.push_back(fmt::format("{}: parallelism.tp: {} is more than the {} GPUs of a node: tensor-parallel collectives cross the "
                                     "network twice per block and pass (slow; Megatron-LM keeps tp within the NVLink domain)",
                                     v->location().str(), mp.tp, g));
    if ((mp.tp < g && g % mp.tp != 0) || (mp.tp > g && mp.tp % g != 0))
      v->fail(fmt::format("a divisor or a multiple of the {} GPUs per node, got {}", g, mp.tp));
  }
  if (auto v = n.get("cp")) {
    mp.cp = int(v->as_int_in(1, world));
    if (t.seq_len % (2 * mp.cp) != 0 && mp.cp > 1)
      v->fail(fmt::format("a cp for which 2 x cp divides seq_len {} (ring attention splits the sequence into 2·cp chunks), got {}", t.seq_len, mp.cp));
    const int tc = mp.tp * mp.cp;
    if ((tc < g && g % tc != 0) || (tc > g && tc % g != 0))
      v->fail(fmt::format("tp x cp = {} must divide or be a multiple of the {} GPUs per node", tc, g));
  }
  if (auto v = n.get("pp")) {
    mp.pp = int(v->as_int_in(1, std::min(world, model.layers)));
  }
  if (auto v = n.get("schedule")) {
    const std::string sch = v->as_choice({"1f1b", "interleaved", "gpipe"});
    mp.schedule = sch == "1f1b" ? PipelineSchedule::OneFOneB : sch == "interleaved" ? PipelineSchedule::Interleaved : PipelineSchedule::GPipe;
  }
  if (auto v = n.get("virtual_stages")) {
    mp.virtual_stages = int(v->as_int_in(1, model.layers));
    if (mp.virtual_stages > 1 && !n.has("schedule")) mp.schedule = PipelineSchedule::Interleaved;
    if (mp.virtual_stages > 1 && mp.schedule != PipelineSchedule::Interleaved)
      v->fail("virtual_stages > 1 needs schedule: interleaved");
    if (mp.virtual_stages > 1 && mp.pp == 1) v->fail("virtual_stages > 1 needs pipeline parallelism (pp > 1)");
  }
  if (mp.schedule == PipelineSchedule::Interleaved && mp.virtual_stages == 1 && mp.pp > 1)
    n.at("schedule").fail("schedule interleaved needs virtual_stages >= 2 (model chunks per stage)");
  if (mp.pp * mp.virtual_stages > model.layers) {
    auto key = n.has("virtual_stages") ? n.at("virtual_stages") : n.at("pp");
    key.fail(fmt::format("pp x virtual_stages = {} x {} at most the model's {} layers", mp.pp, mp.virtual_stages, model.layers));
  }
  if (model.layers % (mp.pp * mp.virtual_stages) != 0) {
    // Allowed (Megatron-LM --decoder-first/last-pipeline-num-layers, torchtitan's uneven stages): every
    // stage is simulated with its own blocks and the slowest sets the pace.
    auto key = n.has("virtual_stages") ? n.at("virtual_stages") : n.at("pp");
    size_t fewest = size_t(model.layers);
    for (int s = 0; s < mp.pp; ++s) fewest = std::min(fewest, mp.stage_layer_indices(model.layers, s).size());
    const size_t most = size_t(mp.stage_layers(model.layers));
    warnings.push_back(fmt::format("{}: parallelism: pp x virtual_stages = {} x {} does not divide the model's {} layers: "
                                   "chunks split as torchtitan does (the middle ones one block more), so {}",
                                   key.location().str(), mp.pp, mp.virtual_stages, model.layers,
                                   fewest == most ? fmt::format("every stage holds {} layers", most)
                                                  : fmt::format("stages hold {} to {} layers", fewest, most)));
  }
  mp.sequence_parallel = mp.tp > 1;
  if (auto v = n.get("sequence_parallel")) mp.sequence_parallel = v->as_bool() && mp.tp > 1;
  if (auto v = n.get("tp_comm_overlap")) mp.tp_comm_overlap = v->as_bool() && mp.tp > 1;
  if (auto v = n.get("tp_backward_overlap")) mp.tp_backward_overlap = v->as_bool();
  if (world % mp.model_parallel_size() != 0) {
    const char* key = n.has("pp") ? "pp" : n.has("cp") ? "cp" : "tp";
    n.at(key).fail(fmt::format("tp x pp x cp = {} x {} x {} = {} must divide the {} GPUs ({} nodes x {})", mp.tp, mp.pp, mp.cp,
                               mp.model_parallel_size(), world, c.nodes, g));
  }
  return mp;
}

StrategySpec parse_strategy(const YamlNode& n, const ClusterSpec& c, const ModelParallelism& mp, std::vector<std::string>& warnings) {
  n.check_keys({"kind", "partition_size", "hierarchical_allgather", "two_hop_sync", "reduce_bucket_size",
                "prefetch_bucket_size", "max_live_parameters", "framework", "version", "persistence_threshold",
                "contiguous_gradients", "mechanisms", "reduce_dtype", "fp8_all_gather"});
  StrategySpec s;
  YamlNode kind = n.at("kind");
  // `fsdp` is FSDP FULL_SHARD / ZeRO-3: sharding over the whole data-parallel dimension.
  std::vector<std::string> kinds = strategy_kind_names();
  kinds.push_back("fsdp");
  const std::string kind_name = kind.as_choice(kinds);
  s.kind = kind_name == "fsdp" ? StrategyKind::Zero3 : *parse_strategy_kind(kind_name);
  // InternEvo's hybrid ZeRO-1 shards the optimizer within groups (its `zero1 = p`, e.g. 8 = one node).
  auto fw = n.get("framework");
  const bool grouped_zero1 = s.kind == StrategyKind::Zero1 && fw && fw->is_scalar() && fw->as_string() == "internevo";
  const bool grouped = s.kind == StrategyKind::MiCS || s.kind == StrategyKind::HSDP || grouped_zero1;
  const int world = c.world_size(), g = c.instance.gpus_per_node;
  auto ignored = [&](const YamlNode& node, const char* applies) {
    warnings.push_back(fmt::format("{}: {}: ignored under strategy.kind {} (applies to {})", node.location().str(),
                                   node.path(), to_string(s.kind), applies));
  };
  s.two_hop_sync = s.kind == StrategyKind::MiCS;  // FSDP1 HYBRID_SHARD all-reduces every micro-step
  if (auto p = n.get("partition_size")) {
    if (!grouped) {
      ignored(*p, "mics, hsdp, zero1 with framework internevo");
    } else {
      if (!mp.none()) {
        // With model parallelism the group is counted in the ranks that hold the same parameters:
        // data x context parallel ones.
        const int dp = world / (mp.tp * mp.pp);
        int64_t v = p->as_int_in(1, dp);
        if (dp % v != 0)
          p->fail(fmt::format("expected a divisor of the {} data- and context-parallel ranks (GPUs / (tp x pp)), got {}", dp, v));
        s.partition_size = static_cast<int>(v);
      } else {
        int64_t v = p->as_int_in(1, world);
        if (world % v != 0) p->fail(fmt::format("expected a divisor of the world size {} ({} nodes x {} GPUs), got {}", world, c.nodes, g, v));
        if (v < g && g % v != 0) p->fail(fmt::format("a partition group inside a node must divide its {} GPUs, got {}", g, v));
        if (v > g && v % g != 0) p->fail(fmt::format("a partition group spanning nodes must be a multiple of {} GPUs per node, got {}", g, v));
        s.partition_size = static_cast<int>(v);
      }
    }
  }
  if (auto h = n.get("hierarchical_allgather")) {
    if (s.kind != StrategyKind::MiCS) ignored(*h, "mics");
    else s.hierarchical_allgather = h->as_bool();
  }
  if (auto t = n.get("two_hop_sync")) {
    if (!grouped) ignored(*t, "mics, hsdp");
    else s.two_hop_sync = t->as_bool();
  }
  if (s.kind == StrategyKind::DDP) s.reduce_bucket_elements = 25e6 / 2;  // PyTorch DDP bucket_cap_mb = 25 (fp16 elements)
  if (auto v = n.get("reduce_bucket_size")) s.reduce_bucket_elements = v->as_double_in(1e3, 1e12);
  if (auto v = n.get("prefetch_bucket_size")) s.prefetch_bucket_elements = v->as_double_in(0, 1e12);
  if (auto v = n.get("max_live_parameters")) s.max_live_parameters = v->as_double_in(1, 1e13);
  // reduce_dtype: FSDP MixedPrecision(Policy).reduce_dtype (torchtitan's default float32; Composer's
  // mixed_precision DEFAULT is fp32, PURE the training precision).
  if (auto v = n.get("reduce_dtype")) s.reduce_precision = parse_precision(v->as_choice({"fp32", "bf16", "fp16"}));
  if (auto v = n.get("fp8_all_gather")) s.fp8_all_gather = v->as_bool();  // checked against training and framework below
  parse_framework(n, s);
  return s;
}

// strategy.fp8_all_gather needs FP8 training (the weights it gathers are the FP8 GEMMs' operands) and a
// framework that implements it: FSDP2 with torchao float8 (enable_fsdp_float8_all_gather) or micsim's
// ideal schedule (Megatron-FSDP's fp8_param_gather runs as it). FSDP1's FlatParameter and DeepSpeed's
// partitioned parameters are gathered in the training precision.
void check_fp8_all_gather(const YamlNode& strategy, Scenario& sc) {
  if (!sc.strategy.fp8_all_gather) return;
  const YamlNode key = strategy.at("fp8_all_gather");
  if (!sc.training.fp8) key.fail("needs training.precision: fp8 (it gathers the FP8 GEMMs' weights in FP8)");
  const std::string& family = sc.strategy.framework->family;  // "ideal" unless a profile is named
  if (family != "ideal" && family != "fsdp2")
    key.fail(fmt::format("framework {} gathers parameters in the training precision; FP8 all-gather is FSDP2's (torchao "
                         "enable_fsdp_float8_all_gather) or micsim's ideal schedule's (Megatron-FSDP fp8_param_gather)",
                         family));
  if (!shards_parameters(sc.strategy))
    sc.warnings.push_back(fmt::format("{}: strategy.fp8_all_gather: ignored under strategy.kind {} (parameters are not gathered)",
                                      key.location().str(), to_string(sc.strategy.kind)));
}

WhatIf parse_what_if(const YamlNode& n, const ClusterSpec& c) {
  // Single entries as mappings (so --set what_if.slow_node.node=3 works) or lists of them.
  n.check_keys({"slow_node", "degraded_nic", "degraded_nvlink", "degraded_uplink", "jitter_seed"});
  WhatIf w;
  if (auto s = n.get("jitter_seed")) w.jitter_seed = static_cast<uint64_t>(s->as_int_in(0, int64_t(1) << 53));
  auto each = [](const YamlNode& node, const std::function<void(const YamlNode&)>& f) {
    if (node.is_sequence()) for (const auto& item : node.items()) f(item);
    else f(node);
  };
  const int leaves = (c.nodes + c.fabric.nodes_per_leaf - 1) / c.fabric.nodes_per_leaf;
  if (auto s = n.get("slow_node")) each(*s, [&](const YamlNode& e) {
      e.check_keys({"node", "compute_factor"});
      w.slow_nodes.push_back({static_cast<int>(e.at("node").as_int_in(0, c.nodes - 1)), e.at("compute_factor").as_double_in(1.0, 1000.0)});
    });
  auto degraded = [&](const char* key, LinkKind kind, const char* where, int count) {
    if (auto s = n.get(key)) each(*s, [&](const YamlNode& e) {
        e.check_keys({where, "bandwidth_factor"});
        w.degraded.push_back({kind, static_cast<int>(e.at(where).as_int_in(0, count - 1)),
                              e.at("bandwidth_factor").as_double_in(0.001, 1.0)});
      });
  };
  degraded("degraded_nic", LinkKind::NicPort, "node", c.nodes);
  degraded("degraded_nvlink", LinkKind::NvLink, "node", c.nodes);
  degraded("degraded_uplink", LinkKind::LeafUplink, "leaf", leaves);
  return w;
}

Scenario parse_scenario(const YamlNode& root) {
  root.check_keys({"name", "cluster", "model", "training", "strategy", "parallelism", "engine", "calibration", "what_if", "plan"});
  Scenario sc;
  sc.file = root.source() ? root.source()->file : "";
  if (auto n = root.get("name")) sc.name = n->as_string();
  sc.cluster = parse_cluster(root.at("cluster"));
  if (!sc.file.empty() && sc.file.rfind("<", 0) != 0) sc.input_files.push_back(sc.file);
  sc.model = parse_model(root.at("model"), sc.input_files);
  YamlNode training = root.at("training");
  sc.training = parse_training(training, sc.cluster.instance.gpu);
  if (auto p = root.get("parallelism")) sc.parallelism = parse_parallelism(*p, sc.cluster, sc.model, sc.training, sc.warnings);
  sc.strategy = parse_strategy(root.at("strategy"), sc.cluster, sc.parallelism, sc.warnings);
  check_fp8_all_gather(root.at("strategy"), sc);
  if (auto w = root.get("what_if")) sc.what_if = parse_what_if(*w, sc.cluster);
  if (auto e = root.get("engine"))
    sc.engine = e->as_choice({"analytic", "simgrid"}) == "analytic" ? EngineKind::Analytic : EngineKind::SimGrid;
  if (auto c = root.get("calibration")) {
    std::string path = resolve_relative(c->location().file, c->as_string());
    if (!std::filesystem::exists(path)) c->fail(fmt::format("calibration file '{}' does not exist", path));
    sc.calibration = load_calibration(path);
    sc.input_files.push_back(path);
    sc.calibration.check_applies_to(sc.cluster.instance.name, c->location());
    // A calibration's attention terms are those of the kernel it measured (`calibrate --kernels` writes
    // the FlashAttention-2 class's); they replace the catalog's terms of the kernel named here.
    if (sc.calibration.has_attention_terms() && sc.training.attention_kernel != AttentionKernel::FA2)
      sc.warnings.push_back(fmt::format("{}: calibration {}: its attention efficiencies replace the {} kernel's catalog terms "
                                        "(they are those of the kernel it measured)",
                                        c->location().str(), path, to_string(sc.training.attention_kernel)));
  }

  // Cross-field checks, reported at the key the user has to change. Products of user numbers are
  // checked before they are formed (int64 would wrap into a negative batch).
  constexpr double kMaxWorld = double(1 << 24), kMaxGlobalBatch = double(int64_t(1) << 40);
  const YamlNode cluster = root.at("cluster");
  if (double(sc.cluster.nodes) * sc.cluster.instance.gpus_per_node > kMaxWorld)
    cluster.at("nodes").fail(fmt::format("{} nodes x {} GPUs is more than 2^24 GPUs", sc.cluster.nodes, sc.cluster.instance.gpus_per_node));
  const int64_t world = sc.world_size();
  if (double(sc.training.micro_batch) * double(world) > kMaxGlobalBatch)
    training.at("micro_batch").fail(fmt::format("micro_batch x {} GPUs is more than 2^40 sequences per micro-step", world));
  const int64_t dp = sc.data_parallel_size();
  const int64_t per_step = sc.training.micro_batch * dp;
  if (sc.training.requested_accumulation_steps > 0) {
    if (double(sc.training.requested_accumulation_steps) * double(per_step) > kMaxGlobalBatch)
      training.at("grad_accumulation_steps").fail(fmt::format("micro_batch x data-parallel ranks x grad_accumulation_steps = {} x {} x {} is more than 2^40 sequences per step",
                                                              sc.training.micro_batch, dp, sc.training.requested_accumulation_steps));
    sc.training.global_batch = sc.training.requested_accumulation_steps * per_step;
  }
  if (sc.training.global_batch % per_step != 0) {
    training.at("global_batch").fail(fmt::format(
        "expected a multiple of micro_batch x data-parallel size = {} x {} = {}, got {}", sc.training.micro_batch,
        dp, per_step, sc.training.global_batch));
  }
  if (sc.model.max_position > 0 && sc.training.seq_len > sc.model.max_position) {
    training.at("seq_len").fail(fmt::format("the model has {} learned positions; seq_len {} does not fit",
                                            sc.model.max_position, sc.training.seq_len));
  }
  if (sc.name.empty())
    sc.name = fmt::format("{}-{}-{}x{}", sc.model.name, to_string(sc.strategy.kind), sc.cluster.nodes,
                          sc.cluster.instance.name);
  return sc;
}

Scenario parse_with_overrides(YAML::Node tree, std::shared_ptr<YamlSource> src, const std::vector<Override>& overrides) {
  apply_overrides(tree, overrides, *src);
  return parse_scenario(YamlNode(tree, "", src));
}

}  // namespace

Scenario parse_scenario_text(const std::string& yaml, const std::string& shown_name, const std::vector<std::string>& sets,
                             const std::vector<Override>& more) {
  YamlNode doc = YamlNode::load_string(yaml, shown_name);
  auto src = std::make_shared<YamlSource>(*doc.source());
  YAML::Node tree = doc.raw();
  if (tree.IsNull()) tree = YAML::Node(YAML::NodeType::Map);
  std::vector<Override> all(sets.begin(), sets.end());
  all.insert(all.end(), more.begin(), more.end());
  return parse_with_overrides(tree, src, all);
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& sets, const std::vector<Override>& more) {
  return parse_scenario_text(read_whole_file(path), path, sets, more);
}

OptimizerImplementation optimizer_implementation_of(const Scenario& sc) {
  if (sc.training.optimizer != Optimizer::Adam) return OptimizerImplementation::Fused;
  if (sc.training.optimizer_implementation) return *sc.training.optimizer_implementation;
  return sc.strategy.framework ? sc.strategy.framework->optimizer_implementation : OptimizerImplementation::Fused;
}

const char* optimizer_implementation_origin(const Scenario& sc) {
  return sc.training.optimizer_implementation ? "training.optimizer_implementation" : "framework profile";
}

}  // namespace micsim
