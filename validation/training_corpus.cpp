#include "validation/training_corpus.hpp"

#include "models/framework/framework.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <regex>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "models/hardware/catalog.hpp"
#include "models/io/csv.hpp"
#include "models/io/input_error.hpp"
#include "models/io/input_file.hpp"
#include "validation/collective_validation.hpp"
#include "validation/least_squares.hpp"
#include "validation/prediction_interval.hpp"

namespace micsim {

bool CorpusRow::sharded() const {
  if (framework == "smp") return true;
  const auto kind = parse_strategy_kind(strategy);
  if (!kind) return false;
  StrategySpec s;
  s.kind = *kind;
  try {
    s.framework = resolve_framework(framework, "", strategy);  // the family's newest profile
  } catch (const std::exception&) {
  }
  return shards_parameters(s);
}

namespace {

namespace fs = std::filesystem;

double num(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return s.empty() || *end || !std::isfinite(v) ? NAN : v;
}

// Catalog GPU for a published name; "unspecified" and variants map to the nearest catalog part.
std::optional<std::string> catalog_gpu(const std::string& g, std::vector<std::string>& assumed) {
  if (g == "V100-SXM2-32GB" || g == "A100-SXM4-40GB" || g == "A100-SXM4-80GB" || g == "H100-SXM-80GB" || g == "H100-HBM2e-96GB" ||
      g == "H200-SXM-141GB")
    return g;
  if (g == "V100-unspecified") return assumed.push_back("V100 taken as V100-SXM2-32GB"), std::string("V100-SXM2-32GB");
  if (g == "A100-unspecified") return assumed.push_back("A100 taken as A100-SXM4-80GB"), std::string("A100-SXM4-80GB");
  if (g == "H100-unspecified") return assumed.push_back("H100 taken as H100-SXM-80GB"), std::string("H100-SXM-80GB");
  return std::nullopt;
}

// The node's network from the published interconnect text; defaults per GPU generation otherwise.
YAML::Node network_of(const std::string& text, const std::string& gpu, int gpus_per_node, std::vector<std::string>& assumed) {
  YAML::Node n;
  const bool hopper = gpu.rfind("H1", 0) == 0 || gpu.rfind("H2", 0) == 0;
  const bool volta = gpu.rfind("V100", 0) == 0;
  std::string fabric = volta ? "efa-2019" : hopper ? "infiniband-ndr" : "infiniband-hdr";
  double node_gbits = volta ? 100 : hopper ? 3200 : 1600;
  std::smatch m;
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  bool known = false;
  if (t.find("efa") != std::string::npos) fabric = volta ? "efa-2019" : hopper ? "efa-v2" : "efa-p4", known = true;
  else if (t.find("roce") != std::string::npos) fabric = "roce-1600g", known = true;
  else if (t.find("infiniband") != std::string::npos || t.find(" ib") != std::string::npos || t.find("hdr") != std::string::npos ||
           t.find("ndr") != std::string::npos) known = true;
  if (std::regex_search(t, m, std::regex(R"((\d+)\s*x\s*(\d+)\s*g)"))) node_gbits = num(m[1]) * num(m[2]), known = true;
  else if (std::regex_search(t, m, std::regex(R"((\d+)\s*gb/s per gpu)"))) node_gbits = num(m[1]) * gpus_per_node, known = true;
  else if (std::regex_search(t, m, std::regex(R"((\d+)\s*gbps)"))) node_gbits = num(m[1]), known = true;
  else if (t.find("p5.48xlarge") != std::string::npos) node_gbits = 3200;
  else if (t.find("p4d") != std::string::npos) node_gbits = 400;
  if (!known && t.find("single node") == std::string::npos)
    assumed.push_back(fmt::format("interconnect not published: {} at {:.0f} Gb/s per node assumed", fabric, node_gbits));
  const int nics = gpus_per_node;
  n["nics"] = nics;
  n["gbits_per_nic"] = node_gbits / nics;
  n["fabric"] = fabric;
  return n;
}

// Tokens/s per GPU from a published metric, in the source's FLOP convention.
std::optional<double> tokens_per_gpu(const std::string& metric, double value, const std::string& conv, double params, int layers,
                                     double hidden, double vocab, double seq, int gpus, double global_batch, double peak,
                                     bool recompute, std::string& skip) {
  if (metric == "tokens_per_s_per_gpu") return value;
  if (metric == "tokens_per_s") return value / gpus;
  if (metric == "samples_per_s") return value * seq / gpus;
  if (metric == "step_time_s") {
    if (!(global_batch > 0)) return skip = "step time without a global batch", std::nullopt;
    return global_batch * seq / value / gpus;
  }
  if (metric == "tflops_per_gpu" || metric == "mfu") {
    const double achieved = metric == "mfu" ? value * peak : value * 1e12;
    double per_token = 0;
    if (conv.find("Megatron") != std::string::npos || conv.find("96*B*s") != std::string::npos) {
      per_token = (recompute ? 96.0 : 72.0) * layers * hidden * hidden * (1 + seq / (6 * hidden) + vocab / (16.0 * layers * hidden));
    } else if (conv.find("6*B*s^2") != std::string::npos) {
      per_token = 6 * params + 6.0 * layers * hidden * seq;  // causal attention counted as half
    } else if (conv.find("12") != std::string::npos && conv.find("6") != std::string::npos) {
      per_token = 6 * params + 12.0 * layers * hidden * seq;
    } else {
      return skip = "FLOP convention not published: cannot convert " + metric, std::nullopt;
    }
    return achieved / per_token;
  }
  return skip = "metric " + metric + " not compared", std::nullopt;
}

std::vector<std::string> corpus_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError({dir, 0, 0}, "", "expected the training-corpus directory (its *.csv files; validation/data/training-corpus)");
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".csv") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// One row of a corpus CSV, read through its header.
struct CsvRowView {
  const CsvTable& table;
  const CsvRow& row;
  std::string operator()(const char* c) const { return table.column(c) >= 0 ? row.fields[table.column(c)] : std::string(); }
};

// Why a row cannot be compared before any scenario is built ("" = it can).
std::string skip_before_scenario(const CsvRowView& f, const CorpusRow& row) {
  const std::string arch = f("arch");
  if (arch != "llama" && arch != "gpt" && arch != "mpt" && arch != "bert") return "architecture " + arch + " not modelled";
  if (row.framework.rfind("other:", 0) == 0 && row.framework != "other:internevo" && row.strategy == "zero1" && !f("partition_size").empty())
    return "ZeRO-1 sharded within groups is modelled for InternEvo only";
  bool arch_known = true;
  for (const char* k : {"layers", "hidden", "heads", "ffn", "vocab"}) arch_known &= num(f(k)) > 0 && num(f(k)) < 1e9;
  if (!arch_known) return "architecture not published in full";
  if (!(num(f("value")) > 0) || !(row.gpus > 0) || !(row.seq_len > 0) || !(row.micro_batch > 0)) return "incomplete row";
  const std::string notes = f("notes");
  const bool offload = (notes.find("offload") != std::string::npos || notes.find("Offload") != std::string::npos) &&
                       notes.find("CPUOffload False") == std::string::npos;
  if (offload) return "CPU offload is not modelled";
  if (row.metric == "samples_per_s" && row.framework == "deepspeed" && notes.find("autotun") != std::string::npos)
    return "autotuner metric, not an end-to-end step";
  return "";
}

// The scenario's cluster: the published GPU, NVLink by generation, the network from the interconnect text.
YAML::Node corpus_instance(const CsvRowView& f, const std::string& gpu, const GpuSpec& spec, int gpn, std::vector<std::string>& assumed) {
  YAML::Node inst;
  const bool hopper = spec.arch >= GpuArch::Hopper;
  inst["gpu"] = gpu;
  inst["gpus_per_node"] = gpn;
  inst["intra_node"]["kind"] = "nvlink";
  inst["intra_node"]["gbytes_per_s"] = spec.arch == GpuArch::Volta ? 120.0 : hopper ? 370.8 : 240.0;
  inst["intra_node"]["nvls"] = hopper;
  inst["network"] = network_of(f("interconnect"), gpu, gpn, assumed);
  return inst;
}

YAML::Node corpus_model(const CsvRowView& f, const CorpusRow& row) {
  const std::string arch = f("arch");
  YAML::Node m;
  m["arch"] = arch == "mpt" ? "gpt" : arch;
  for (const char* k : {"layers", "hidden", "heads", "ffn", "vocab"}) m[k] = int64_t(num(f(k)));
  const double kv = num(f("kv_heads"));
  if (kv > 0) m["kv_heads"] = int64_t(kv);
  if (arch == "mpt") {
    // MPT (llm-foundry benchmark configs): no learned positions beyond the sequence, no dropout.
    m["max_position"] = row.seq_len, m["dropout"] = false;
  }
  if (arch == "gpt" || arch == "bert") m["max_position"] = std::max<int64_t>(row.seq_len, 512);
  return m;
}

// The training block; `ck` is the checkpointing policy the row runs (written back where assumed).
YAML::Node corpus_training(const CsvRowView& f, CorpusRow& row, const GpuSpec& spec, std::string& ck) {
  auto& assumed = row.assumptions;
  YAML::Node tr;
  tr["seq_len"] = row.seq_len;
  tr["micro_batch"] = row.micro_batch;
  const double gb = num(f("global_batch")), ga = num(f("grad_accum"));
  const double per_step = double(row.micro_batch) * row.gpus;
  if (gb > 0 && std::fmod(gb, per_step) == 0) tr["global_batch"] = int64_t(gb);
  else if (ga > 0) tr["grad_accumulation_steps"] = int64_t(ga);
  else tr["grad_accumulation_steps"] = 1, assumed.push_back("one micro-step per step");
  tr["precision"] = row.precision == "fp16" ? "fp16" : row.precision == "fp8" ? "fp8" : "bf16";
  if (f("compile") == "unknown") assumed.push_back("no torch.compile");
  if (f("compile") == "fused") assumed.push_back("hand-fused norm/rotary/SwiGLU kernels run as torch.compile's fusion");
  tr["compile"] = row.compile;
  ck = row.checkpointing;
  if (ck == "unknown" || ck.empty()) ck = "full", assumed.push_back("full activation checkpointing");
  tr["activation_checkpointing"] = ck;
  // torchtitan's loss is F.cross_entropy on the logits cast to fp32 (train.py loss_fn); a file may
  // state the loss per row (column cross_entropy: fused | torch | compiled).
  if (f("software").find("torchtitan") != std::string::npos) tr["cross_entropy"] = "torch";
  const std::string ce = f("cross_entropy");
  if (ce == "fused" || ce == "torch" || ce == "compiled") tr["cross_entropy"] = ce;
  // llm-foundry runs on Composer, whose trainer keeps the logits in state.outputs (for its training
  // metrics) through the backward: Trainer._train_microbatch, self.state.outputs = self.state.model(batch).
  if (f("arch") == "mpt") tr["logits_kept_through_backward"] = true;
  // AdamW's update: the framework profile's default (fsdp1 and internevo: foreach, as Composer's
  // DecoupledAdamW, fms-fsdp, TinyLlama and InternEvo ran it; models/catalog/frameworks.yaml), or what a
  // file states per row where a source's commit differs (column optimizer_implementation: fused | foreach).
  const std::string opt_impl = f("optimizer_implementation");
  if (opt_impl == "fused" || opt_impl == "foreach") tr["optimizer_implementation"] = opt_impl;
  // The FP8 recipe where a file states it (column fp8_recipe: dynamic | delayed); default dynamic.
  const std::string recipe = f("fp8_recipe");
  if (row.precision == "fp8" && (recipe == "dynamic" || recipe == "delayed")) tr["fp8_recipe"] = recipe;
  // Whether full-block recomputation stops early (PyTorch >= 2.1 non-reentrant checkpoint), where a file
  // states it per row (column recompute_early_stop); otherwise the framework profile's default.
  const std::string early = f("recompute_early_stop");
  if (early == "true" || early == "false") tr["recompute_early_stop"] = early == "true";
  const double every = num(f("checkpoint_every"));
  if (ck == "selective-layer") {
    tr["checkpoint_every"] = every > 0 ? int64_t(every) : 2;
    if (!(every > 0)) assumed.push_back("selective-layer every 2nd block");
  }
  const std::string flash = f("flash_attention");
  if (flash == "true" || flash == "false") tr["flash_attention"] = flash == "true" && spec.arch >= GpuArch::Ampere;
  // The fused kernel where the source names it (FlashAttention-3, cuDNN through Transformer Engine);
  // empty = the FlashAttention-2 class that SDPA's flash backend and flash-attn 2 run.
  const std::string kernel = f("attention_kernel");
  if (!kernel.empty() && kernel != "fa2") tr["attention_kernel"] = kernel, tr["flash_attention"] = true;
  row.triton_attention = kernel == "triton";
  return tr;
}

YAML::Node corpus_strategy(const CsvRowView& f, const CorpusRow& row) {
  YAML::Node st;
  st["kind"] = row.strategy == "hsdp" ? "hsdp" : row.strategy;
  if (row.strategy == "hsdp") st["partition_size"] = int64_t(num(f("partition_size")));
  const std::string fw = row.framework;
  if (fw == "fsdp1" || fw == "fsdp2" || fw == "deepspeed") st["framework"] = fw;
  // InternEvo's configs reduce in buckets of 512 * 1024 * 1024 elements (configs/7B_sft.py).
  if (fw == "other:internevo" && row.strategy == "zero1") {
    st["framework"] = "internevo", st["reduce_bucket_size"] = 536870912;
    if (!f("partition_size").empty()) st["partition_size"] = int64_t(num(f("partition_size")));  // InternEvo zero1 = p
  }
  if (fw == "smp") st["kind"] = "mics", st["framework"] = "smp", st["partition_size"] = int64_t(num(f("partition_size")));
  // Gradient reductions in fp32: torchtitan's FSDP2 MixedPrecisionPolicy(reduce_dtype=float32) at every
  // commit in the corpus (training.mixed_precision_reduce, only choice "float32"); a file may state it
  // per row (column reduce_dtype: fp32 | bf16 | fp16, e.g. Composer's mixed_precision DEFAULT = fp32).
  if (f("software").find("torchtitan") != std::string::npos) st["reduce_dtype"] = "fp32";
  const std::string rd = f("reduce_dtype");
  if (rd == "fp32" || rd == "bf16" || rd == "fp16") st["reduce_dtype"] = rd;
  // FP8 all-gather of the linear weights (torchao enable_fsdp_float8_all_gather, Megatron-FSDP
  // fp8_param_gather), where the file states it (column fp8_all_gather).
  if (f("fp8_all_gather") == "true" && row.precision == "fp8") st["fp8_all_gather"] = true;
  std::smatch vm;
  const std::string software = f("software");
  if (fw == "deepspeed" && std::regex_search(software, vm, std::regex(R"(DeepSpeed[ v]*([0-9]+\.[0-9]+(\.[0-9]+)?))")))
    st["version"] = vm[1].str();
  return st;
}

// One row of a corpus file: its scenario (a YAML tree) and the published figure in tokens/s per GPU, or
// the reason it is not compared (skip_reason).
CorpusRow read_corpus_row(const CsvRowView& f, const std::string& file, int line) {
  const auto& cat = HardwareCatalog::builtin();
  CorpusRow row;
  row.id = f("id"), row.source = f("source"), row.source_group = f("source_group"), row.file = file, row.line = line;
  row.gpu = f("gpu"), row.framework = f("framework"), row.strategy = f("strategy"), row.metric = f("metric");
  row.series = f("series"), row.precision = f("precision"), row.checkpointing = f("activation_checkpointing"), row.model = f("model");
  row.convention = f("flop_convention");
  row.gpus = int(num(f("gpus")));
  row.seq_len = int64_t(num(f("seq_len")));
  row.micro_batch = int64_t(num(f("micro_batch")));
  // "fused": no torch.compile, but the software fuses the norms, rotary embedding and SwiGLU by hand
  // (flash-attn / xformers / Transformer Engine kernels), which is the fusion micsim's compile models.
  row.compile = f("compile") == "true" || f("compile") == "fused";
  auto& assumed = row.assumptions;
  auto skipped = [&](const std::string& why) {
    row.skip_reason = why;
    return row;
  };
  auto gpu = catalog_gpu(row.gpu, assumed);
  if (!gpu) return skipped("GPU " + row.gpu + " not in the catalog");
  const GpuSpec& spec = *cat.find_gpu(*gpu);
  row.arch = spec.arch;
  if (std::string why = skip_before_scenario(f, row); !why.empty()) return skipped(why);
  int gpn = int(num(f("gpus_per_node")));
  if (!(gpn > 0)) gpn = std::min(row.gpus, 8), assumed.push_back(fmt::format("{} GPUs per node", gpn));
  gpn = std::min(gpn, row.gpus);
  if (row.gpus % gpn != 0) return skipped("GPUs not a multiple of GPUs per node");
  if (row.precision == "fp8" && spec.peak_fp8_flops <= 0) return skipped("fp8 on a GPU without FP8");
  YAML::Node y;
  y["name"] = row.id;
  y["cluster"]["instance"] = corpus_instance(f, *gpu, spec, gpn, assumed);
  y["cluster"]["nodes"] = row.gpus / gpn;
  y["model"] = corpus_model(f, row);
  std::string ck;
  y["training"] = corpus_training(f, row, spec, ck);
  y["strategy"] = corpus_strategy(f, row);
  YAML::Emitter e;
  e << y;
  row.scenario_yaml = std::string(e.c_str()) + "\n";
  // The published figure in tokens/s per GPU.
  const double params = num(f("params"));
  const double peak = row.precision == "fp8" && row.convention.find("1979") != std::string::npos ? spec.peak_fp8_flops
                                                                                               : spec.peak(Precision::BF16);
  std::string why;
  auto tok = tokens_per_gpu(row.metric, num(f("value")), row.convention, params > 0 ? params : NAN, int(num(f("layers"))), num(f("hidden")),
                            num(f("vocab")), double(row.seq_len), row.gpus, num(f("global_batch")), peak, ck == "full", why);
  if (!tok || !std::isfinite(*tok)) return skipped(why.empty() ? "cannot convert the metric" : why);
  row.published = *tok;
  return row;
}

// The MosaicML A100 table (its own format, beside the corpus directory): FULL_SHARD rows on whole nodes.
void add_mosaicml_a100_table(const std::string& dir, std::vector<CorpusRow>& out) {
  const fs::path mosaic = fs::path(dir).parent_path() / "mosaicml-fsdp-a100.csv";
  if (!fs::exists(mosaic)) return;
  CsvTable t = load_csv(mosaic.string());
  static const std::map<std::string, std::tuple<int, int, int>> mpt = {
      {"125m", {768, 12, 12}}, {"350m", {1024, 16, 24}}, {"760m", {1536, 12, 24}}, {"1b", {2048, 16, 24}}, {"3b", {2560, 20, 32}},
      {"7b", {4096, 32, 32}}, {"13b", {5120, 40, 40}}, {"30b", {7168, 56, 48}}, {"70b", {8192, 64, 80}}};
  for (const auto& r : t.rows) {
    const CsvRowView f{t, r};
    auto it = mpt.find(f("Model"));
    const int gpus = int(num(f("# GPUs")));
    if (it == mpt.end() || f("Sharding Strategy") != "FULL_SHARD" || gpus % 8 != 0) continue;
    CorpusRow row;
    auto [h, heads, layers] = it->second;
    row.source = f("source"), row.source_group = "mosaicml", row.file = mosaic.string(), row.line = r.line;
    row.gpu = f("GPU") == "a100_40gb" ? "A100-SXM4-40GB" : "A100-SXM4-80GB";
    row.arch = GpuArch::Ampere;
    row.gpus = gpus, row.seq_len = int64_t(num(f("SeqLen (T)"))), row.micro_batch = int64_t(num(f("MicroBatchSize")));
    row.framework = "fsdp1", row.strategy = "zero3", row.metric = "mfu", row.model = "mpt-" + f("Model");
    row.id = fmt::format("mosaicml-a100-{}-s{}-g{}-{}-mb{}", f("Model"), row.seq_len, gpus, f("GPU"), row.micro_batch);
    row.checkpointing = f("Activation Checkpointing") == "True" ? "full" : "none";
    row.precision = "bf16";
    row.convention = "6N+12Lhs (llm-foundry)";
    YAML::Node y;
    y["name"] = row.id;
    y["cluster"]["instance"] = f("GPU") == "a100_40gb" ? "mosaicml-a100-40gb" : "mosaicml-a100-80gb";
    y["cluster"]["nodes"] = gpus / 8;
    YAML::Node m = y["model"];
    m["arch"] = "gpt", m["layers"] = layers, m["hidden"] = h, m["heads"] = heads, m["ffn"] = 4 * h, m["vocab"] = 50368;
    m["max_position"] = row.seq_len, m["dropout"] = false;
    YAML::Node tr = y["training"];
    tr["seq_len"] = row.seq_len, tr["micro_batch"] = row.micro_batch, tr["global_batch"] = int64_t(num(f("GlobalBatchSize")));
    tr["precision"] = "bf16", tr["activation_checkpointing"] = row.checkpointing, tr["flash_attention"] = true;
    tr["logits_kept_through_backward"] = true;  // Composer, as for the llm-foundry rows above
    // The b2a43a1 tables were measured on PyTorch 1.13 (its benchmarking README: "TODO: Update tables with
    // torch 2.0"), whose non-reentrant checkpoint reruns the whole block: no early stop.
    tr["recompute_early_stop"] = false;
    // submit_benchmarks.py --attn_impl default 'triton' (llm-foundry b2a43a1, the tables' commit):
    // flash_attn_triton.py on triton-pre-mlir.
    tr["attention_kernel"] = "triton";
    row.triton_attention = true;
    y["strategy"]["kind"] = "zero3";
    y["strategy"]["framework"] = "fsdp1";
    // Composer's FSDP mixed_precision (mosaic_fsdp_utils.get_mixed_precision at v0.17.2): DEFAULT
    // reduces in fp32, PURE in the training precision.
    y["strategy"]["reduce_dtype"] = f("MP Mode") == "DEFAULT" ? "fp32" : "bf16";
    YAML::Emitter e;
    e << y;
    row.scenario_yaml = std::string(e.c_str()) + "\n";
    const double params = num(f("NumParams"));
    row.published = num(f("MFU")) / 100.0 * 312e12 / (6 * params + 12.0 * layers * h * double(row.seq_len));
    out.push_back(row);
  }
}

}  // namespace

std::vector<CorpusRow> load_training_corpus(const std::string& dir) {
  std::vector<CorpusRow> out;
  for (const auto& file : corpus_files(dir)) {
    CsvTable t = load_csv(file);
    for (const char* c : {"id", "source", "source_group", "gpu", "gpus", "metric", "value", "arch", "layers", "hidden", "heads", "ffn",
                          "vocab", "seq_len", "micro_batch", "strategy", "framework", "precision"})
      if (t.column(c) < 0) throw InputError({file, 1, 0}, c, "missing column of the training corpus");
    for (const auto& r : t.rows) out.push_back(read_corpus_row(CsvRowView{t, r}, file, r.line));
  }
  add_mosaicml_a100_table(dir, out);
  if (out.empty()) throw InputError({dir, 0, 0}, "", "no training-corpus rows here (expected *.csv files in the corpus format, validation/data/training-corpus/README.md)");
  return out;
}

const std::vector<std::string>& CorpusConstants::names() {
  static const std::vector<std::string> n = {"host_launch_us", "attention_scale_ampere", "memory_pressure_slowdown", "jitter_cv",
                                             "gemm_scale_volta", "gemm_scale_ampere", "gemm_scale_hopper", "triton_attention_scale",
                                             "attention_scale_hopper", "straggler_stalls_per_gpu_hour", "straggler_stall_ms",
                                             "interference", "jitter_window_exponent"};
  return n;
}
std::vector<double> CorpusConstants::values() const {
  return {host_launch_s * 1e6, attention_scale_ampere, memory_pressure_slowdown, jitter_cv, gemm_scale_volta, gemm_scale_ampere, gemm_scale_hopper,
          triton_attention_scale, attention_scale_hopper, straggler_stalls_per_gpu_hour, straggler_stall_ms, interference,
          jitter_window_exponent};
}
CorpusConstants CorpusConstants::from(const std::vector<double>& v) {
  CorpusConstants k;
  k.host_launch_s = v[0] * 1e-6, k.attention_scale_ampere = v[1], k.memory_pressure_slowdown = v[2], k.jitter_cv = v[3];
  k.gemm_scale_volta = v[4], k.gemm_scale_ampere = v[5], k.gemm_scale_hopper = v[6];
  k.triton_attention_scale = v[7], k.attention_scale_hopper = v[8];
  k.straggler_stalls_per_gpu_hour = v[9], k.straggler_stall_ms = v[10];
  k.interference = v[11];
  k.jitter_window_exponent = v[12];
  return k;
}

std::vector<CorpusPrediction> predict_corpus(const std::vector<CorpusRow>& rows, const CorpusConstants& k, int threads) {
  std::vector<const CorpusRow*> todo;
  for (const auto& r : rows)
    if (r.skip_reason.empty()) todo.push_back(&r);
  std::vector<CorpusPrediction> out(todo.size());
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (size_t i = next++; i < todo.size(); i = next++) try {
      const CorpusRow& row = *todo[i];
      out[i].row = &row;
      Scenario sc;
      try {
        sc = parse_scenario_text(row.scenario_yaml, "<corpus>");
      } catch (const InputError& e) {
        throw InputError({row.file, row.line, 0}, e.key(), e.detail());
      }
      sc.calibration.host_launch_s = k.host_launch_s;
      sc.calibration.memory_pressure_slowdown = k.memory_pressure_slowdown;
      sc.calibration.jitter_cv = std::max(1e-9, k.jitter_cv);
      sc.calibration.jitter_window_exponent = k.jitter_window_exponent;
      sc.calibration.straggler_rate_per_s = k.straggler_stalls_per_gpu_hour / 3600.0;
      sc.calibration.straggler_stall_s = k.straggler_stall_ms * 1e-3;
      sc.calibration.triton_attention_scale = k.triton_attention_scale;
      sc.calibration.interference = k.interference;
      const GpuArch a = sc.cluster.instance.gpu.arch;
      sc.calibration.gemm_scale = a == GpuArch::Volta ? k.gemm_scale_volta : a >= GpuArch::Hopper ? k.gemm_scale_hopper : k.gemm_scale_ampere;
      sc.calibration.attention_scale = a >= GpuArch::Hopper ? k.attention_scale_hopper : k.attention_scale_ampere;
      SimulationResult r = simulate_analytic(prepare_simulation(sc));
      out[i].predicted = r.tokens_per_s / r.world_size;
      out[i].fits = r.memory.fits;
      out[i].memory_utilisation = r.memory_utilisation;
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = todo.size();
    }
  };
  const int n = std::max(1, threads > 0 ? threads : int(std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

// The multiplicative scale constants (attention_scale_*, gemm_scale_*, triton_attention_scale): read
// off their names, so a constant added to CorpusConstants gets the prior by being named a scale.
static bool is_scale_constant(int index) { return CorpusConstants::names()[index].find("scale") != std::string::npos; }

static int constant_index(const std::string& name) {
  const auto& n = CorpusConstants::names();
  return int(std::find(n.begin(), n.end(), name) - n.begin());
}

// The prior residual of a fitted constant, where it has one: a weak prior centred on 1 for every
// scale constant (a step runs its kernels as fast as their benchmarks do), and the published range
// for interference (kInterferencePrior).
static std::optional<double> prior_residual(int index, double v) {
  if (is_scale_constant(index)) return std::log(v) / kScalePriorSigma;
  if (index == constant_index("interference")) return (v - kInterferencePrior) / kInterferencePriorSigma;
  return std::nullopt;
}

std::vector<std::pair<const CorpusPrediction*, const CorpusPrediction*>> scaling_series_ends(const std::vector<CorpusPrediction>& preds) {
  std::map<std::string, std::vector<const CorpusPrediction*>> by;
  for (const auto& p : preds)
    if (!p.row->series.empty()) by[p.row->series].push_back(&p);
  std::vector<std::pair<const CorpusPrediction*, const CorpusPrediction*>> out;
  for (auto& [name, v] : by) {
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->row->gpus < b->row->gpus; });
    if (v.front()->row->gpus < v.back()->row->gpus) out.push_back({v.front(), v.back()});
  }
  return out;
}

CorpusConstants fit_corpus_constants(const std::vector<CorpusRow>& rows, const CorpusConstants& start, int threads) {
  const std::vector<double> v0 = start.values();
  // The host launch cost stays at its start value: no corpus row is launch-bound enough to determine it.
  std::vector<FitParameter> params = {{"attention_scale_ampere", std::max(0.2, v0[1]), 0.2, 5},
                                      {"memory_pressure_slowdown", std::max(0.01, v0[2]), 0.001, 5},
                                      {"jitter_cv", std::max(0.002, v0[3]), 1e-4, 0.5}};
  // A generation's sustained-GEMM constant is fitted only when the rows include that generation.
  std::vector<int> fitted = {1, 2, 3};
  const int interference = constant_index("interference");
  params.push_back({"interference", std::max(0.02, v0[interference]), 0.0, 0.9}), fitted.push_back(interference);
  bool has[3] = {false, false, false};
  for (const auto& r : rows)
    if (r.skip_reason.empty()) has[r.arch == GpuArch::Volta ? 0 : r.arch >= GpuArch::Hopper ? 2 : 1] = true;
  for (int g = 0; g < 3; ++g)
    if (has[g]) params.push_back({CorpusConstants::names()[4 + g], std::max(0.2, v0[4 + g]), 0.2, 2.0}), fitted.push_back(4 + g);
  // Hopper's in-step attention factor, when Hopper rows are in the fit.
  if (has[2]) params.push_back({"attention_scale_hopper", std::max(0.2, v0[8]), 0.2, 5}), fitted.push_back(8);
  // FlashAttention in Triton: fitted only when rows that run it are in the fit; otherwise it stays at
  // its start (1 = the paper's ratios), so a held-out source of such rows is scored on the paper alone.
  if (std::any_of(rows.begin(), rows.end(), [](const CorpusRow& r) { return r.skip_reason.empty() && r.triton_attention; }))
    params.push_back({"triton_attention_scale", std::max(0.2, v0[7]), 0.2, 5}), fitted.push_back(7);
  // Stragglers (opt-in: a start with both terms > 0, `validate --corpus --fit-stragglers`): fitted only
  // where scaling series are in the fit, on their per-GPU throughput change too (rows at one GPU count
  // cannot tell a stall that grows with the ranks from a slower kernel). Each series' change then weighs
  // sqrt(rows / series), so all series together count as much as all rows. Off by default: held out it
  // did not help (docs/model.md sec 2.6).
  const int window = constant_index("jitter_window_exponent");
  const bool fit_stragglers = v0[9] > 0 && v0[10] > 0, fit_window = v0[window] > 0;
  size_t n_series = 0, n_rows = 0;
  if (fit_stragglers || fit_window) {
    std::vector<CorpusPrediction> compared;  // the rows a fit compares; the series need no simulation to be counted
    for (const auto& r : rows)
      if (r.skip_reason.empty()) compared.push_back(CorpusPrediction{&r});
    n_series = scaling_series_ends(compared).size(), n_rows = compared.size();
  }
  if (n_series > 0 && fit_stragglers) {
    params.push_back({"straggler_stalls_per_gpu_hour", v0[9], 0.0, 100.0}), fitted.push_back(9);
    params.push_back({"straggler_stall_ms", v0[10], 1.0, 5000.0}), fitted.push_back(10);
  }
  // The jitter's window exponent (opt-in: a start > 0, `validate --corpus --fit-jitter-window`): how
  // the noise shrinks over longer micro-steps is what the series' losses at different micro-step
  // lengths tell, so it is fitted on their per-GPU throughput change too, weighted as above.
  if (n_series > 0 && fit_window) params.push_back({"jitter_window_exponent", v0[window], 0.0, 1.0}), fitted.push_back(window);
  const double series_weight = n_series > 0 ? std::sqrt(double(n_rows) / double(n_series)) : 0.0;
  auto expand = [&](const std::vector<double>& v) {
    std::vector<double> all = v0;
    for (size_t i = 0; i < fitted.size(); ++i) all[fitted[i]] = v[i];
    return CorpusConstants::from(all);
  };
  FitOutcome o = fit_least_squares(params, [&](const std::vector<double>& v) {
    std::vector<double> res;
    const std::vector<CorpusPrediction> preds = predict_corpus(rows, expand(v), threads);
    for (const auto& p : preds) res.push_back(std::log(p.predicted / p.row->published));
    if (series_weight > 0)
      for (const auto& [lo, hi] : scaling_series_ends(preds))
        res.push_back(series_weight * (std::log(hi->predicted / lo->predicted) - std::log(hi->row->published / lo->row->published)));
    // The priors (prior_residual), one more residual each. With all rows the scale prior moves nothing
    // that the rows determine; with a large source held out it keeps constants the remaining rows barely
    // constrain (A100 attention, set by a few 4k-token rows) from swinging to what compensates another
    // constant. sigma 0.2 = a factor within about +-20 % at one standard deviation. Interference, which
    // the rows trade against jitter_cv, is held inside the published measurements the same way.
    for (size_t i = 0; i < fitted.size(); ++i)
      if (auto r = prior_residual(fitted[i], v[i])) res.push_back(*r);
    return res;
  }, 0.1, 30);
  return expand(o.values);
}

SourceScore score(const std::string& group, const std::vector<double>& errors) {
  SourceScore s;
  s.group = group;
  s.rows = errors.size();
  if (errors.empty()) return s;
  std::vector<double> a;
  for (double e : errors) a.push_back(std::fabs(e)), s.mape += std::fabs(e), s.mean_signed += e;
  s.mape /= double(errors.size());
  s.mean_signed /= double(errors.size());
  ErrorSummary sum = summarize_errors(errors);
  s.median_abs = sum.median_abs, s.p90_abs = sum.p90_abs;
  return s;
}

HeldOutCorpus held_out_corpus(const std::vector<CorpusRow>& rows, const CorpusConstants& start, int threads) {
  HeldOutCorpus out;
  std::vector<std::string> groups;
  for (const auto& r : rows)
    if (r.skip_reason.empty() && std::find(groups.begin(), groups.end(), r.source_group) == groups.end()) groups.push_back(r.source_group);
  std::sort(groups.begin(), groups.end());
  for (const auto& g : groups) {
    std::vector<CorpusRow> train, test;
    for (const auto& r : rows) {
      if (!r.skip_reason.empty()) continue;
      (r.source_group == g ? test : train).push_back(r);
    }
    CorpusConstants k = fit_corpus_constants(train, start, threads);
    out.constants[g] = k;
    for (auto p : predict_corpus(test, k, threads)) {
      // Point back into `rows` (the caller's), not the local copy.
      for (const auto& r : rows)
        if (r.id == p.row->id && r.file == p.row->file && r.line == p.row->line) p.row = &r;
      out.predictions.push_back(p);
    }
  }
  return out;
}

namespace {

// Weighted quantile: order statistics placed at the midpoints of their cumulative weights, linear
// between them (the usual unweighted interpolation when every weight is equal).
double weighted_quantile(std::vector<std::pair<double, double>> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double total = 0;
  for (const auto& [x, w] : v) total += w;
  double before = 0, prev_pos = 0, prev_x = v.front().first;
  for (size_t i = 0; i < v.size(); ++i) {
    const double pos = (before + v[i].second / 2) / total;
    if (q <= pos) return i == 0 ? v[i].first : prev_x + (v[i].first - prev_x) * (q - prev_pos) / (pos - prev_pos);
    before += v[i].second, prev_pos = pos, prev_x = v[i].first;
  }
  return v.back().first;
}

}  // namespace

std::vector<ErrorBand> error_bands(const std::vector<CorpusPrediction>& preds, int min_sources) {
  // Rows per class, and per class the rows of each source group (its weight is 1 / that count).
  std::map<std::pair<std::string, std::string>, std::vector<const CorpusPrediction*>> by;
  for (const auto& p : preds) {
    for (const auto& key : ErrorBands::classes(p.row->arch, p.row->sharded())) by[key].push_back(&p);
  }
  std::vector<ErrorBand> out;
  for (const auto& [key, ps] : by) {
    // Each source group's errors in this class; a row weighs 1 / its group's rows in a quantile.
    std::map<std::string, std::vector<double>> errors;
    for (const auto* p : ps) errors[p->row->source_group].push_back(p->error());
    if (int(errors.size()) < min_sources && key.first != "all") continue;
    std::vector<std::pair<double, double>> weighted, within;
    std::vector<std::vector<double>> groups;
    for (const auto& [g, v] : errors) {
      double mean = 0;
      for (double e : v) weighted.emplace_back(e, 1.0 / double(v.size())), mean += e / double(v.size());
      // A group of one row says nothing about the spread inside a stack.
      if (v.size() >= 2)
        for (double e : v) within.emplace_back(e - mean, 1.0 / double(v.size()));
      groups.push_back(v);
    }
    ErrorBand b{key.first, key.second, int(ps.size()), int(errors.size())};
    // A new source's row: the random-effects interval (between-source and within-source spread), once
    // there are enough groups to estimate the between-source part; source-weighted quantiles below that.
    if (groups.size() >= 3) {
      const RandomEffectsInterval re = random_effects_interval(groups, 0.9);
      b.q05 = re.low, b.q95 = re.high;
    } else {
      b.q05 = weighted_quantile(weighted, 0.05), b.q95 = weighted_quantile(weighted, 0.95);
    }
    b.rel_q05 = within.empty() ? b.q05 : weighted_quantile(within, 0.05);
    b.rel_q95 = within.empty() ? b.q95 : weighted_quantile(within, 0.95);
    out.push_back(b);
  }
  // Specific classes first, the all/all fallback last.
  std::stable_sort(out.begin(), out.end(), [](const ErrorBand& a, const ErrorBand& b) {
    return (a.gpu_generation == "all") < (b.gpu_generation == "all") || ((a.gpu_generation == "all") == (b.gpu_generation == "all") &&
                                                                        (a.family == "all") < (b.family == "all"));
  });
  return out;
}

std::string error_bands_yaml(const std::vector<ErrorBand>& bands, const std::string& source, int min_sources) {
  std::string y = "# 90 % prediction intervals of micsim's step time and throughput for a run of a new source: the\n"
                  "# random-effects interval (mean of the source groups' mean errors +/- t(0.95; k-2) x the between- and\n"
                  "# within-source spread; validation/prediction_interval.hpp) of predicted/published - 1 over the\n"
                  "# training corpus, every row predicted with constants fitted on the other source groups (leave one\n"
                  "# source out), every source group weighing the same;\n"
                  "# rel_q05/rel_q95: 5th and 95th percentiles of each row's error less its group's mean (the spread inside one stack).\n"
                  "# Generated: do not edit; regenerate with\n"
                  "#   micsim validate --corpus validation/data/training-corpus --leave-one-source-out --write-bands FILE\n";
  YAML::Emitter e;
  e << YAML::DoubleQuoted << source;
  y += fmt::format("source: {}\nminimum_sources: {}\nbands:\n", e.c_str(), min_sources);
  for (const auto& b : bands)
    y += fmt::format("  - {{gpu: {}, family: {}, rows: {}, sources: {}, q05: {:.4f}, q95: {:.4f}, rel_q05: {:.4f}, rel_q95: {:.4f}}}\n",
                     b.gpu_generation, b.family, b.rows, b.sources, b.q05, b.q95, b.rel_q05, b.rel_q95);
  return y;
}

BandCoverage band_coverage(const std::vector<CorpusPrediction>& preds, int min_sources) {
  std::map<std::string, std::vector<const CorpusPrediction*>> by_group;
  for (const auto& p : preds) by_group[p.row->source_group].push_back(&p);
  BandCoverage c;
  size_t inside = 0;
  for (const auto& [g, mine] : by_group) {
    std::vector<CorpusPrediction> others;
    for (const auto& p : preds)
      if (p.row->source_group != g) others.push_back(p);
    const auto bands = error_bands(others, min_sources);
    int in_group = 0;
    for (const auto* p : mine) {
      const ErrorBand* b = ErrorBands::find(bands, p->row->arch, p->row->sharded());
      in_group += b && p->error() >= b->q05 && p->error() <= b->q95;
    }
    c.groups.push_back({g, in_group, int(mine.size())});
    inside += size_t(in_group);
    c.rows += mine.size();
    c.per_source += double(in_group) / double(mine.size());
  }
  c.row_coverage = c.rows ? double(inside) / double(c.rows) : 0.0;
  c.per_source = by_group.empty() ? 0.0 : c.per_source / double(by_group.size());
  return c;
}

}  // namespace micsim
