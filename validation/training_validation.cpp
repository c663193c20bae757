#include "validation/training_validation.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "models/io/input_file.hpp"
#include "models/io/csv.hpp"
#include "models/io/input_error.hpp"
#include "models/io/yaml_node.hpp"
#include "sim/simulation.hpp"

namespace micsim {

namespace {

// MPT shapes of the llm-foundry benchmark (scripts/train/yamls/pretrain/mpt-*.yaml): d_model, heads,
// layers. The benchmark configs keep biases and a learned position table as long as the sequence, as
// the published NumParams show (checked row by row).
const std::map<std::string, std::tuple<int, int, int>> kMpt = {
    {"125m", {768, 12, 12}},  {"350m", {1024, 16, 24}}, {"760m", {1536, 12, 24}}, {"1b", {2048, 16, 24}},
    {"3b", {2560, 20, 32}},   {"7b", {4096, 32, 32}},   {"13b", {5120, 40, 40}},  {"30b", {7168, 56, 48}},
    {"70b", {8192, 64, 80}},
};

double num(const std::string& s, const std::string& file, int line, const char* key) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v))
    throw InputError({file, line, 0}, key, fmt::format("expected a number, got '{}'", shorten_for_message(s)));
  return v;
}

int64_t integer(const std::string& s, const std::string& file, int line, const char* key, double max = double(1 << 30)) {
  const double v = num(s, file, line, key);
  if (v != std::floor(v) || v < 0 || v > max)
    throw InputError({file, line, 0}, key, fmt::format("expected a whole number in [0, {:.0f}], got '{}'", max, shorten_for_message(s)));
  return int64_t(v);
}

// Scenario text built from a YAML tree of checked values: CSV text is never pasted into YAML, so a
// field cannot add keys (e.g. a `calibration:` that would read another file).
std::string emit(const YAML::Node& n) {
  YAML::Emitter e;
  e << n;
  return std::string(e.c_str()) + "\n";
}

void require_columns(const CsvTable& t, std::initializer_list<const char*> columns, const char* what) {
  for (const char* c : columns)
    if (t.column(c) < 0) throw InputError({t.file, 1, 0}, c, std::string("missing column of ") + what);
}

// A row of `dataset` read from one CSV line: where it came from and the published value.
TrainingRow start_row(const CsvTable& t, const CsvRow& r, const char* dataset, const char* value_column) {
  TrainingRow row;
  row.dataset = dataset;
  row.file = t.file;
  row.line = r.line;
  row.source = r.fields[t.column("source")];
  row.published = num(r.fields[t.column(value_column)], t.file, r.line, value_column);
  return row;
}

std::vector<TrainingRow> load_mosaicml(const CsvTable& t) {
  std::vector<TrainingRow> out;
  require_columns(t, {"Model", "SeqLen (T)", "# GPUs", "GPU", "MFU", "MicroBatchSize", "GradAccum", "GlobalBatchSize",
                      "Sharding Strategy", "Activation Checkpointing", "NumParams", "source"}, "the MosaicML benchmark table");
  for (const auto& r : t.rows) {
    auto f = [&](const char* c) { return r.fields[t.column(c)]; };
    TrainingRow row = start_row(t, r, "mosaicml-fsdp-a100", "MFU");
    row.metric = "mfu";
    row.published /= 100.0;  // the table gives percent
    row.convention = "llm-foundry MFU: (6N + 12·L·h·s) per token, no recompute";
    row.published_params = static_cast<long long>(integer(f("NumParams"), t.file, r.line, "NumParams", 1e15));
    const std::string size = f("Model");
    const int gpus = int(integer(f("# GPUs"), t.file, r.line, "# GPUs"));
    const int seq = int(integer(f("SeqLen (T)"), t.file, r.line, "SeqLen (T)"));
    row.id = fmt::format("mpt-{} seq {} {} GPUs {} mb {}", size, seq, gpus, f("GPU"), f("MicroBatchSize"));
    auto it = kMpt.find(size);
    if (it == kMpt.end()) {
      row.skip_reason = "unknown MPT size " + size;
      out.push_back(row);
      continue;
    }
    if (f("Sharding Strategy") != "FULL_SHARD" || gpus % 8 != 0) {
      row.skip_reason = "not FULL_SHARD on whole 8-GPU nodes";
      out.push_back(row);
      continue;
    }
    auto [h, heads, layers] = it->second;
    const std::string inst = f("GPU") == "a100_40gb" ? "mosaicml-a100-40gb" : "mosaicml-a100-80gb";
    const bool ckpt = f("Activation Checkpointing") == "True";
    // FSDP FULL_SHARD: shard over every GPU, reduce-scatter per FSDP unit (micsim's hsdp with p = N).
    YAML::Node y;
    y["name"] = row.id;
    y["cluster"]["instance"] = inst;
    y["cluster"]["nodes"] = gpus / 8;
    YAML::Node m = y["model"];
    m["arch"] = "gpt", m["layers"] = layers, m["hidden"] = h, m["heads"] = heads, m["ffn"] = 4 * h, m["vocab"] = 50368;
    m["max_position"] = seq, m["dropout"] = false;
    YAML::Node tr = y["training"];
    tr["seq_len"] = seq;
    tr["micro_batch"] = integer(f("MicroBatchSize"), t.file, r.line, "MicroBatchSize");
    tr["global_batch"] = integer(f("GlobalBatchSize"), t.file, r.line, "GlobalBatchSize");
    tr["precision"] = "bf16", tr["activation_checkpointing"] = ckpt, tr["flash_attention"] = true;
    tr["attention_kernel"] = "triton";  // llm-foundry submit_benchmarks.py --attn_impl default 'triton' (flash_attn_triton.py)
    y["strategy"]["kind"] = "hsdp";
    y["strategy"]["partition_size"] = gpus;
    row.scenario_yaml = emit(y);
    out.push_back(row);
  }
  return out;
}

std::vector<TrainingRow> load_training_results(const CsvTable& t) {
  std::vector<TrainingRow> out;
  require_columns(t, {"id", "source", "model", "layers", "hidden", "heads", "ffn", "vocab", "seq_len", "gpus", "strategy",
                      "micro_batch", "metric", "value", "notes"}, "training-results.csv");
  for (const auto& r : t.rows) {
    auto f = [&](const char* c) { return r.fields[t.column(c)]; };
    TrainingRow row = start_row(t, r, "training-results", "value");
    row.id = f("id");
    const std::string metric = f("metric");
    const std::string id = row.id;
    if (id.rfind("mics-", 0) == 0) {
      row.metric = metric;
      row.skip_reason = "a claim over many runs: scripts/reproduce-mics-paper compares it";
    } else if (id.rfind("fsdp-gpt175b", 0) == 0) {
      // 128 GPUs (16 nodes); Megatron's TFLOPS formula counts the recompute forward.
      row.metric = "hw_tflops_per_gpu";
      row.convention = "Megatron formula with full recompute (96·B·s·l·h²(1 + s/6h + V/16lh)) = micsim hw_tflops_per_gpu";
      const int mb = int(integer(f("micro_batch"), t.file, r.line, "micro_batch"));
      // minGPT (the paper's model) is eager PyTorch: explicit attention, unfused tanh-GELU. 256 GPUs:
      // the paper reports linear scaling over 128-512 GPUs, except 128 GPUs at batch 2 (defragmentation).
      row.assumptions = "256 GPUs of the published 128-512; minGPT's eager kernels (flash_attention: false, fused_kernels: false)";
      YAML::Node y;
      y["name"] = id;
      y["cluster"]["instance"] = "fsdp-paper-a100-80gb";
      y["cluster"]["nodes"] = 32;
      y["model"]["preset"] = "gpt-175b";
      YAML::Node tr = y["training"];
      tr["seq_len"] = 2048, tr["micro_batch"] = mb, tr["global_batch"] = mb * 256, tr["precision"] = "bf16";
      tr["activation_checkpointing"] = true, tr["flash_attention"] = false, tr["fused_kernels"] = false;
      y["strategy"]["kind"] = "hsdp";
      y["strategy"]["partition_size"] = 256;
      row.scenario_yaml = emit(y);
    } else if (id.rfind("ibm-fsdp-", 0) == 0) {
      row.metric = "mfu";
      row.convention = "PaLM MFU (6N + 12·L·h·s per token), as the blog's 57 % at 3700 tokens/s/GPU for Llama2-7B implies";
      const bool h100 = id.find("h100") != std::string::npos;
      const int gpus = int(integer(f("gpus"), t.file, r.line, "gpus"));
      const int layers = int(integer(f("layers"), t.file, r.line, "layers")), hidden = int(integer(f("hidden"), t.file, r.line, "hidden"));
      const int heads = int(integer(f("heads"), t.file, r.line, "heads")), ffn = int(integer(f("ffn"), t.file, r.line, "ffn"));
      const int kv = (hidden >= 8192) ? 8 : heads;  // 34B (Code Llama) and 70B use 8 KV heads
      row.assumptions = "micro-batch 2 with full activation checkpointing (the blog's per-model settings are not in the data)";
      YAML::Node y;
      y["name"] = id;
      y["cluster"]["instance"] = h100 ? "ibm-h100-80gb-800g" : "ibm-a100-80gb-400g";
      y["cluster"]["nodes"] = gpus / 8;
      YAML::Node m = y["model"];
      m["arch"] = "llama", m["layers"] = layers, m["hidden"] = hidden, m["heads"] = heads, m["kv_heads"] = kv, m["ffn"] = ffn;
      m["vocab"] = 32000;
      YAML::Node tr = y["training"];
      tr["seq_len"] = 4096, tr["micro_batch"] = 2, tr["global_batch"] = 2 * gpus, tr["precision"] = "bf16";
      tr["activation_checkpointing"] = true, tr["flash_attention"] = true;
      y["strategy"]["kind"] = "hsdp";
      y["strategy"]["partition_size"] = gpus;
      row.scenario_yaml = emit(y);
    } else {
      row.metric = metric;
      row.skip_reason = "model or metric micsim does not model (e.g. T5 encoder-decoder)";
    }
    out.push_back(row);
  }
  return out;
}

}  // namespace

bool is_training_dataset(const std::string& path) {
  std::string head = read_whole_file(path).substr(0, 200);
  return head.rfind("source,section,Model", 0) == 0 || head.rfind("id,source,system", 0) == 0;
}

std::vector<TrainingRow> load_training_dataset(const std::string& path) { return parse_training_dataset(read_whole_file(path), path); }

std::vector<TrainingRow> parse_training_dataset(const std::string& text, const std::string& path) {
  CsvTable t = parse_csv(text, path);
  if (t.column("section") >= 0 && t.column("MFU") >= 0) return load_mosaicml(t);
  if (t.column("id") >= 0 && t.column("metric") >= 0) return load_training_results(t);
  throw InputError({path, 1, 0}, "", "not a known dataset (expected the MosaicML table, training-results.csv or nccl-tests rows)");
}

std::vector<TrainingComparison> compare_training(const std::vector<TrainingRow>& rows) {
  std::vector<TrainingComparison> out;
  for (const auto& row : rows) {
    if (row.scenario_yaml.empty()) continue;
    TrainingComparison c;
    c.row = row;
    // A row the simulator refuses is reported at its CSV line, not at a line of the generated scenario.
    Scenario sc;
    try {
      sc = parse_scenario_text(row.scenario_yaml, "<row>");
    } catch (const InputError& e) {
      throw InputError({row.file, row.line, 0}, e.key(), e.detail());
    }
    PreparedSimulation p = prepare_simulation(sc);
    SimulationResult r = simulate_analytic(p);
    c.params = r.params;
    c.fits = r.memory.fits;
    c.predicted = row.metric == "mfu" ? r.mfu : row.metric == "hw_tflops_per_gpu" ? r.hw_tflops_per_gpu : r.tflops_per_gpu;
    out.push_back(c);
  }
  return out;
}

}  // namespace micsim
