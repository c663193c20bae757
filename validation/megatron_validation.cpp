#include "validation/megatron_validation.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "models/io/csv.hpp"
#include "models/io/input_error.hpp"
#include "sim/simulation.hpp"

namespace micsim {

double narayanan_flops_per_iteration(double B, double s, double l, double h, double V) {
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

// Korthikanti et al. 2022, §6.3: model FLOPs (no recomputation) 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)).
static double korthikanti_model_flops(double B, double s, double l, double h, double V) {
  return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

namespace {

constexpr double kA100PeakFp16 = 312e12;  // Selene A100 80 GB, dense 16-bit (both papers' peak)

double num(const std::string& s) {
  if (s.empty()) return NAN;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' ? v : NAN;
}

// One row of the shared header (validation/data/megatron/README.md) into a row to score, or a skip.
MegatronRow read_row(const CsvTable& t, const CsvRow& r) {
  auto f = [&](const char* k) {
    int c = t.column(k);
    return c >= 0 && c < int(r.fields.size()) ? r.fields[size_t(c)] : std::string();
  };
  MegatronRow row;
  row.id = f("id"), row.file = t.file, row.line = r.line, row.source = f("source"), row.table = f("table"), row.metric = f("metric");
  row.published = num(f("value"));
  auto skip = [&](const std::string& why) {
    row.skip_reason = why;
    return row;
  };
  const bool time_metric = row.metric == "tflops_per_gpu" || row.metric == "iteration_time_s" || row.metric == "mfu";
  const bool memory_metric = row.metric == "activation_memory_saving_percent_analytic";
  if (!time_metric && !memory_metric) return skip(fmt::format("metric {} is not predicted", row.metric));
  if (f("gpu").rfind("A100", 0) != 0) return skip("not a Selene A100 row");
  // Korthikanti's MFU rows repeat the runs of its iteration-time rows; only §6.3's full-recompute run
  // at 2,240 GPUs has no time. Appendix C (micro-batch-level recompute) is a technique not modelled.
  if (row.metric == "mfu" && row.id != "kor22-s63-530b-2240g-fullrc-mfu") return skip("the same run as an iteration_time_s row");
  row.gpus = int(num(f("gpus")));
  const double layers = num(f("layers")), hidden = num(f("hidden")), heads = num(f("heads")), vocab = num(f("vocab")),
               seq = num(f("seq_len")), ffn = num(f("ffn")), gb = num(f("global_batch"));
  if (!(row.gpus > 0) || !(layers > 0) || !(hidden > 0) || !(seq > 0) || !(gb > 0)) return skip("configuration incomplete (GPUs, shape or batch)");
  double tp = num(f("tp")), pp = num(f("pp"));
  const bool zero3 = row.id.find("zero3") != std::string::npos;
  if (zero3) {
    tp = pp = 1;
  } else if (!(tp > 0) || !(pp > 0)) {
    // Narayanan Table 2 states the model-parallel size only; Table 1 runs the same models with tp = 8.
    const double mp = row.id.find("174p6b") != std::string::npos ? 96 : row.id.find("529p6b") != std::string::npos ? 280 : NAN;
    if (!(mp > 0) || row.id.find("-t2-ptd-") == std::string::npos) return skip("tp and pp not stated");
    tp = 8, pp = mp / 8;
    row.assumptions.push_back(fmt::format("tp 8, pp {} (the table gives the model-parallel size {} only)", pp, mp));
  }
  row.tp = int(tp), row.pp = int(pp);
  row.dp = row.gpus / (row.tp * row.pp);
  row.strategy = zero3 ? "zero3" : "ddp";
  double mb = num(f("micro_batch"));
  if (!(mb > 0)) mb = 1, row.assumptions.push_back("micro-batch 1 (not stated; the era's example scripts use 1)");
  std::string schedule = f("schedule");
  double v = num(f("virtual_stages"));
  if (row.pp > 1 && schedule.empty()) schedule = "interleaved", row.assumptions.push_back("interleaved schedule (§5.1)");
  if (schedule == "interleaved" && !(v > 1)) {
    // Not stated: the most chunks up to 3 (Korthikanti's choice for 175B and 530B) that divide the stage's layers.
    const int per_stage = int(layers) / row.pp;
    v = per_stage % 3 == 0 ? 3 : per_stage % 2 == 0 ? 2 : 1;
    if (v == 1) schedule = "1f1b";
    row.assumptions.push_back(fmt::format("{} virtual stages (not stated)", int(v)));
  }
  row.virtual_stages = v > 1 ? int(v) : 1;
  std::string recompute = f("recompute");
  if (recompute.empty()) recompute = "full", row.assumptions.push_back("full activation recomputation (the paper's FLOP count includes it)");
  std::string sp = f("sequence_parallel");
  if (memory_metric && sp.empty()) sp = "true", row.assumptions.push_back("sequence parallelism (the §5 analysis is for tp with sp)");

  YAML::Node y;
  y["name"] = row.id;
  y["cluster"]["instance"] = "dgx-a100-80gb";
  y["cluster"]["nodes"] = std::max(1, row.gpus / 8);
  if (row.gpus % 8 != 0) return skip("GPUs not a multiple of 8");
  YAML::Node m = y["model"];
  m["arch"] = "gpt";
  m["layers"] = int64_t(layers), m["hidden"] = int64_t(hidden), m["heads"] = int64_t(heads);
  m["ffn"] = int64_t(ffn > 0 ? ffn : 4 * hidden), m["vocab"] = int64_t(vocab), m["max_position"] = int64_t(seq);
  YAML::Node tr = y["training"];
  tr["seq_len"] = int64_t(seq), tr["micro_batch"] = int64_t(mb), tr["global_batch"] = int64_t(gb);
  tr["precision"] = "fp16";
  tr["flash_attention"] = false;  // 2021-22 Megatron-LM: fused scale-mask-softmax, no FlashAttention
  tr["activation_checkpointing"] = recompute == "selective" ? "selective-op" : recompute;
  YAML::Node par = y["parallelism"];
  par["tp"] = row.tp, par["pp"] = row.pp;
  if (row.pp > 1) par["schedule"] = schedule.empty() ? "1f1b" : schedule;
  if (row.virtual_stages > 1) par["virtual_stages"] = row.virtual_stages;
  par["sequence_parallel"] = sp == "true";
  y["strategy"]["kind"] = row.strategy;
  if (zero3) {
    // Narayanan's ZeRO-3 baseline: DeepSpeed (2021) inside Megatron-LM.
    y["strategy"]["framework"] = "deepspeed";
    y["strategy"]["version"] = "0.3.16";
    row.assumptions.push_back("DeepSpeed 0.3.16 (2021; the paper names no version)");
  }
  YAML::Emitter e;
  e << y;
  row.scenario_yaml = std::string(e.c_str()) + "\n";

  if (row.metric == "tflops_per_gpu")
    row.published_time_s = narayanan_flops_per_iteration(gb, seq, layers, hidden, vocab) / (row.published * 1e12 * row.gpus);
  else if (row.metric == "iteration_time_s")
    row.published_time_s = row.published;
  else if (row.metric == "mfu")
    row.published_time_s = korthikanti_model_flops(gb, seq, layers, hidden, vocab) / (row.published / 100 * kA100PeakFp16 * row.gpus);
  return row;
}

}  // namespace

std::vector<MegatronRow> load_megatron_rows(const std::string& dir) {
  std::vector<MegatronRow> out;
  for (const char* name : {"narayanan2021.csv", "korthikanti2022.csv"}) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    if (!std::filesystem::exists(path)) throw InputError({dir, 0, 0}, "", fmt::format("a directory with {} (validation/data/megatron)", name));
    CsvTable t = load_csv(path);
    for (const auto& r : t.rows) out.push_back(read_row(t, r));
  }
  return out;
}

std::vector<MegatronPrediction> predict_megatron(const std::vector<MegatronRow>& rows) {
  std::vector<MegatronPrediction> out;
  for (const auto& row : rows) {
    if (!row.skip_reason.empty()) continue;
    Scenario sc = parse_scenario_text(row.scenario_yaml, row.file + ":" + std::to_string(row.line));
    PreparedSimulation p = prepare_simulation(sc);
    MegatronPrediction pr;
    pr.row = &row;
    pr.fits = p.memory.fits;
    pr.peak_memory_gib = p.memory.peak_bytes / double(1 << 30);
    if (row.metric == "activation_memory_saving_percent_analytic") {
      // Selective recomputation drops the attention core: its share of a block's activations (tp 8, SP).
      const ModelSpec& md = sc.model;
      const double block = rank_block_activation_bytes(md, 1, sc.training.seq_len, Precision::FP16, false, sc.parallelism);
      const double core = attention_core_activation_bytes(md, 1, sc.training.seq_len, Precision::FP16, false) / sc.parallelism.tp;
      pr.predicted = 100.0 * core / block;
      out.push_back(pr);
      continue;
    }
    SimulationResult r = simulate_analytic(p);
    pr.predicted_time_s = r.iteration_time_s;
    if (row.metric == "iteration_time_s") pr.predicted = r.iteration_time_s;
    else pr.predicted = row.published * row.published_time_s / r.iteration_time_s;  // TFLOP/s and MFU scale as 1/time
    out.push_back(pr);
  }
  return out;
}

}  // namespace micsim
