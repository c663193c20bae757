#include "planner/handoff/handoff.hpp"

#include <fmt/format.h>

#include <cmath>

#include "models/io/input_file.hpp"
#include "models/io/json_input.hpp"

namespace micsim {

DeepSpeedHandoff deepspeed_handoff(const Scenario& sc) {
  using nlohmann::json;
  const auto& s = sc.strategy;
  DeepSpeedHandoff out;
  if (s.kind == StrategyKind::HSDP) {
    // DeepSpeed's hierarchical sharding is MiCS (or ZeRO++ hpZ, which shards secondary copies of
    // parameters only): no config reproduces HYBRID_SHARD's replicated optimizer states.
    out.notes.push_back("hsdp (PyTorch FSDP HYBRID_SHARD) has no DeepSpeed equivalent: no ds_config.json is written; "
                        "use train_fsdp2.py, torchtitan.toml or accelerate.yaml, or simulate strategy.kind=mics for DeepSpeed");
    return out;
  }
  json j;
  j["train_batch_size"] = sc.training.global_batch;
  j["train_micro_batch_size_per_gpu"] = sc.training.micro_batch;
  j["gradient_accumulation_steps"] = sc.grad_accumulation_steps();
  if (sc.training.precision == Precision::FP16) j["fp16"] = {{"enabled", true}, {"loss_scale", 0}};
  if (sc.training.precision == Precision::BF16) j["bf16"] = {{"enabled", true}};
  if (sc.training.fp8)
    out.notes.push_back("fp8: DeepSpeed runs bf16 here; FP8 GEMMs come from Transformer Engine layers in the model code");
  json z;
  switch (s.kind) {
    case StrategyKind::DDP: z["stage"] = 0; break;
    case StrategyKind::Zero1: z["stage"] = 1; break;
    case StrategyKind::Zero2: z["stage"] = 2; break;
    default: z["stage"] = 3; break;
  }
  if (s.kind == StrategyKind::MiCS) {
    ParallelLayout l = make_layout(s, sc.cluster.nodes, sc.cluster.instance.gpus_per_node, sc.parallelism);
    z["mics_shard_size"] = l.partition_size;
    z["mics_hierarchical_params_gather"] = l.hierarchical;
    out.notes.push_back("MiCS: build the model inside `with deepspeed.zero.MiCS_Init(config_dict_or_path=\"ds_config.json\"):` "
                        "(zero.Init would shard over all GPUs); deepspeed.initialize then runs MiCS with this mics_shard_size");
    if (!s.two_hop_sync)
      out.notes.push_back("DeepSpeed's MiCS always syncs gradients in two hops; the simulated one-hop sync has no switch");
  }
  // The gradient reductions' precision when the scenario sets one (DeepSpeed's default, null, is the
  // training precision: deepspeed/runtime/config.py get_communication_data_type).
  if (s.reduce_precision) j["communication_data_type"] = to_string(*s.reduce_precision);
  if (s.kind != StrategyKind::DDP) {
    z["overlap_comm"] = true;
    z["contiguous_gradients"] = s.contiguous_gradients;
    z["reduce_bucket_size"] = int64_t(s.reduce_bucket_elements);
  }
  if (s.kind == StrategyKind::Zero2 || s.kind == StrategyKind::Zero1) z["reduce_scatter"] = true;
  if (s.kind == StrategyKind::Zero1 && s.partition_size > 0) {
    // InternEvo's zero1 = p (optimizer sharded within groups) has no DeepSpeed counterpart.
    out.notes.push_back(fmt::format("ZeRO-1 in groups of {}: DeepSpeed stage 1 shards over all data-parallel ranks; the simulated "
                                    "layout is InternEvo's `parallel = dict(zero1={})`", s.partition_size, s.partition_size));
  }
  if (s.kind == StrategyKind::Zero3 || s.kind == StrategyKind::MiCS) {
    z["stage3_prefetch_bucket_size"] = int64_t(s.prefetch_bucket_elements);
    z["stage3_max_live_parameters"] = int64_t(s.max_live_parameters);
    if (s.persistence_threshold >= 0) z["stage3_param_persistence_threshold"] = int64_t(s.persistence_threshold);
  }
  j["zero_optimization"] = z;
  // DeepSpeed's activation_checkpointing block only configures checkpointing that the model calls; the
  // config cannot turn it on, so it is not written (the note says what to call).
  if (sc.training.activation_checkpointing())
    out.notes.push_back(fmt::format("activation checkpointing ({}): the model code turns it on (Hugging Face: "
                                    "model.gradient_checkpointing_enable(); otherwise deepspeed.checkpointing.checkpoint "
                                    "around each block); ds_config cannot", to_string(sc.training.checkpointing)));
  if (s.framework && s.framework->family != "deepspeed")
    out.notes.push_back(fmt::format("the plan was simulated with framework {}: simulate with strategy.framework=deepspeed "
                                    "to predict DeepSpeed's own overheads", s.framework->name));
  out.config = j;
  return out;
}

namespace {

int line_of(const std::string& text, const std::string& key) {
  size_t pos = text.find("\"" + key + "\"");
  if (pos == std::string::npos) return 0;
  int line = 1;
  for (size_t i = 0; i < pos; ++i) line += text[i] == '\n';
  return line;
}

}  // namespace

DeepSpeedOverrides read_deepspeed_config(const std::string& path, int world_size) {
  return parse_deepspeed_config(read_whole_file(path), path, world_size);
}

DeepSpeedOverrides parse_deepspeed_config(const std::string& text, const std::string& path, int world_size) {
  nlohmann::json j = parse_json_input(text, path, "DeepSpeed config");
  if (!j.is_object()) throw InputError({path, 1, 0}, "", "expected a JSON object (a DeepSpeed config)");
  DeepSpeedOverrides out;
  auto where = [&](const std::string& key) -> SourceLocation { return {path, line_of(text, key.substr(key.rfind('.') + 1)), 0}; };
  auto fail = [&](const std::string& key, const std::string& what) { throw InputError(where(key), key, what); };
  // Each scenario change names the DeepSpeed key it came from, so a bad value is reported there.
  auto set = [&](const std::string& ds_key, const std::string& assignment) {
    out.overrides.emplace_back(assignment, fmt::format("{} ({})", where(ds_key).str(), ds_key));
  };
  auto is_auto = [](const nlohmann::json& v) { return v.is_string() && v.get<std::string>() == "auto"; };
  auto integer = [&](const nlohmann::json& obj, const std::string& key, const std::string& shown) -> std::optional<int64_t> {
    if (!obj.contains(key) || obj[key].is_null() || is_auto(obj[key])) return std::nullopt;
    const auto& v = obj[key];
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
    // Floats such as 5e8 are integers too; beyond 2^53 they are not exact, and beyond 2^63 not representable.
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (d >= 0 && d <= 9.0e15 && d == std::floor(d)) return int64_t(d);
    }
    fail(shown, fmt::format("expected a non-negative integer, got {}", shorten_for_message(v.dump())));
    return std::nullopt;
  };
  auto boolean = [&](const nlohmann::json& obj, const std::string& key, const std::string& shown) -> std::optional<bool> {
    if (!obj.contains(key) || is_auto(obj[key])) return std::nullopt;
    if (!obj[key].is_boolean()) {
      fail(shown, fmt::format("expected true or false, got {}", shorten_for_message(obj[key].dump())));
      return std::nullopt;
    }
    return obj[key].get<bool>();
  };
  auto mbs = integer(j, "train_micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu");
  auto tbs = integer(j, "train_batch_size", "train_batch_size");
  auto gas = integer(j, "gradient_accumulation_steps", "gradient_accumulation_steps");
  if (mbs) set("train_micro_batch_size_per_gpu", fmt::format("training.micro_batch={}", *mbs));
  if (tbs) {
    set("train_batch_size", fmt::format("training.global_batch={}", *tbs));
  } else if (mbs && gas) {
    // micro-batch x accumulation x world, overflow-checked (the scenario caps the global batch at 2^40).
    const double g = double(*mbs) * double(*gas) * double(world_size);
    if (g > double(int64_t(1) << 40)) fail("gradient_accumulation_steps", fmt::format("train_micro_batch_size_per_gpu x gradient_accumulation_steps x {} GPUs = {:.3g} sequences per step; at most 2^40", world_size, g));
    set("gradient_accumulation_steps", fmt::format("training.global_batch={}", *mbs * *gas * world_size));
  }
  if (j.contains("fp16") && j["fp16"].is_object() && boolean(j["fp16"], "enabled", "fp16.enabled").value_or(false))
    set("fp16", "training.precision=fp16");
  else if (j.contains("bf16") && j["bf16"].is_object() && boolean(j["bf16"], "enabled", "bf16.enabled").value_or(false))
    set("bf16", "training.precision=bf16");
  if (j.contains("optimizer") && j["optimizer"].is_object() && j["optimizer"].contains("type")) {
    std::string t = j["optimizer"]["type"].is_string() ? j["optimizer"]["type"].get<std::string>() : "";
    for (auto& c : t) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (t.find("lamb") != std::string::npos) set("optimizer", "training.optimizer=lamb");
    else if (t.find("adam") != std::string::npos) {
      set("optimizer", "training.optimizer=adam");
      // "torch_adam": true makes DeepSpeed build torch.optim.AdamW (foreach on CUDA) instead of its FusedAdam
      // (deepspeed/runtime/engine.py _configure_basic_optimizer, TORCH_ADAM_PARAM).
      const auto& params = j["optimizer"].contains("params") ? j["optimizer"]["params"] : nlohmann::json();
      if (params.is_object() && boolean(params, "torch_adam", "optimizer.params.torch_adam").value_or(false))
        set("optimizer", "training.optimizer_implementation=foreach");
    }
    else if (t.find("sgd") != std::string::npos) set("optimizer", "training.optimizer=sgd");
    else fail("optimizer.type", "expected Adam, AdamW, Lamb or SGD (micsim models these)");
  }
  // DeepSpeed's activation_checkpointing block configures checkpointing that the model code calls
  // (deepspeed.checkpointing.checkpoint); its presence alone does not turn it on. `false`, `null` or
  // an empty block mean none; an object with settings means the model checkpoints.
  if (j.contains("activation_checkpointing")) {
    const auto& a = j["activation_checkpointing"];
    if (a.is_boolean()) set("activation_checkpointing", fmt::format("training.activation_checkpointing={}", a.get<bool>() ? "true" : "false"));
    else if (a.is_object() && !a.empty()) set("activation_checkpointing", "training.activation_checkpointing=true");
    else if (!a.is_null() && !(a.is_object() && a.empty()))
      fail("activation_checkpointing", fmt::format("expected an object (DeepSpeed's checkpointing settings) or true/false, got {}", shorten_for_message(a.dump())));
  }
  if (j.contains("communication_data_type") && !j["communication_data_type"].is_null()) {
    const auto& c = j["communication_data_type"];
    std::string t = c.is_string() ? c.get<std::string>() : "";
    for (auto& ch : t) ch = char(std::tolower(static_cast<unsigned char>(ch)));  // DeepSpeed lower-cases it
    if (t != "fp32" && t != "fp16" && t != "bf16")
      fail("communication_data_type", fmt::format("expected \"fp32\", \"fp16\" or \"bf16\", got {}", shorten_for_message(c.dump())));
    set("communication_data_type", "strategy.reduce_dtype=" + t);
  }
  if (j.contains("zero_optimization")) {
    const auto& z = j["zero_optimization"];
    if (!z.is_object()) fail("zero_optimization", "expected an object");
    auto stage = integer(z, "stage", "zero_optimization.stage").value_or(0);
    if (stage > 3) fail("zero_optimization.stage", fmt::format("expected 0, 1, 2 or 3, got {}", stage));
    auto shard = integer(z, "mics_shard_size", "zero_optimization.mics_shard_size");
    if (stage == 3 && shard && *shard > 0) {
      set("zero_optimization.mics_shard_size", "strategy.kind=mics");
      set("zero_optimization.mics_shard_size", fmt::format("strategy.partition_size={}", *shard));
      bool hier = boolean(z, "mics_hierarchical_params_gather", "zero_optimization.mics_hierarchical_params_gather").value_or(false);
      set("zero_optimization.mics_hierarchical_params_gather", fmt::format("strategy.hierarchical_allgather={}", hier ? "true" : "false"));
      set("zero_optimization.mics_shard_size", "strategy.two_hop_sync=true");
    } else {
      const char* kinds[] = {"ddp", "zero1", "zero2", "zero3"};
      set("zero_optimization.stage", fmt::format("strategy.kind={}", kinds[stage]));
    }
    if (auto v = integer(z, "reduce_bucket_size", "zero_optimization.reduce_bucket_size"))
      set("zero_optimization.reduce_bucket_size", fmt::format("strategy.reduce_bucket_size={}", *v));
    if (auto v = integer(z, "stage3_prefetch_bucket_size", "zero_optimization.stage3_prefetch_bucket_size"))
      set("zero_optimization.stage3_prefetch_bucket_size", fmt::format("strategy.prefetch_bucket_size={}", *v));
    if (auto v = integer(z, "stage3_max_live_parameters", "zero_optimization.stage3_max_live_parameters"))
      set("zero_optimization.stage3_max_live_parameters", fmt::format("strategy.max_live_parameters={}", *v));
    // A DeepSpeed config is run by DeepSpeed: its profile, unless the scenario names a version of it.
    set("zero_optimization", "strategy.framework=deepspeed");
    if (auto v = integer(z, "stage3_param_persistence_threshold", "zero_optimization.stage3_param_persistence_threshold"))
      set("zero_optimization.stage3_param_persistence_threshold", fmt::format("strategy.persistence_threshold={}", *v));
    if (auto v = boolean(z, "contiguous_gradients", "zero_optimization.contiguous_gradients"))
      set("zero_optimization.contiguous_gradients", fmt::format("strategy.contiguous_gradients={}", *v ? "true" : "false"));
    for (auto it = z.begin(); it != z.end(); ++it) {
      static const std::vector<std::string> used = {"stage", "mics_shard_size", "mics_hierarchical_params_gather",
                                                    "reduce_bucket_size", "stage3_prefetch_bucket_size",
                                                    "stage3_max_live_parameters", "stage3_param_persistence_threshold",
                                                    "contiguous_gradients"};
      if (std::find(used.begin(), used.end(), it.key()) == used.end()) out.ignored.push_back("zero_optimization." + it.key());
    }
  }
  static const std::vector<std::string> top = {"train_micro_batch_size_per_gpu", "train_batch_size", "gradient_accumulation_steps",
                                               "fp16", "bf16", "optimizer", "activation_checkpointing", "zero_optimization",
                                               "communication_data_type"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(top.begin(), top.end(), it.key()) == top.end()) out.ignored.push_back(it.key());
  return out;
}

}  // namespace micsim
