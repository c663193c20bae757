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

// The sources of torchtitan runs in fsdp-tp.csv, by id prefix, and what each implies beyond its
// columns: the GPU, whether its torchtitan compiled the loss with training.compile
// (torchtitan/components/loss.py build_cross_entropy_loss, from bbb1b616 of 2025-04-02; 9dec370 of the
// December 2024 tables has "compiling loss function causes CUDA errors, turning off for now"), and the
// summary group of its rows.
struct TorchtitanSource {
  const char* prefix;
  const char* gpu;
  const char* gpu_assumption;  // printed with each row where the source does not name the part
  bool loss_compiled;
  const char* optimizer;       // training.optimizer_implementation of that commit's default AdamW
  const char* family;          // summary group (memory rows; the tokens/s rows add their own)
};
constexpr TorchtitanSource kTorchtitanSources[] = {
    // Grand Teton: 96 GB HBM2e at 2.4 TB/s, 500 W (the doc's platform section); torchtitan 9dec370, whose
    // AdamW runs foreach (torchtitan/optimizer.py L132-L138: foreach = not fused, --optimizer.fused off).
    {"tt24dec-", "H100-HBM2e-96GB", "", false, "foreach", "tt24dec peak memory (FSDP2 + TP/PP/CP)"},
    // Trainy on WhiteFiber, June 2025, torchtitan e7c0cae (optimizer.implementation "fused", the default
    // since torchtitan #881 of 2025-02-24).
    {"tt25-h200-", "H200-SXM-141GB", "", true, "fused", "tt25 H200 peak memory (FSDP2, compiled loss)"},
    // torchao's float8 README, table of 2025-03: torchtitan main of early 2025 (fused, as above).
    {"torchao25-", "H100-SXM-80GB", "H100 SXM 80 GB (the variant is not stated)", false, "fused", "torchao float8 README peak memory (8 H100)"},
};
const TorchtitanSource* torchtitan_source(const std::string& id) {
  for (const auto& s : kTorchtitanSources)
    if (id.rfind(s.prefix, 0) == 0) return &s;
  return nullptr;
}

MegatronRow read_torchtitan_row(const CsvTable& t, const CsvRow& r, const TorchtitanSource& src);

std::string field(const CsvTable& t, const CsvRow& r, const char* name) {
  const int c = t.column(name);
  return c >= 0 && c < int(r.fields.size()) ? r.fields[size_t(c)] : std::string();
}

// Where a row comes from and what it publishes (every file shares the header).
MegatronRow row_identity(const CsvTable& t, const CsvRow& r) {
  MegatronRow row;
  row.id = field(t, r, "id"), row.file = t.file, row.line = r.line, row.source = field(t, r, "source");
  row.table = field(t, r, "table"), row.metric = field(t, r, "metric");
  row.published = num(field(t, r, "value"));
  return row;
}

// One row of the shared header (validation/data/megatron/README.md) into a row to score, or a skip.
MegatronRow read_row(const CsvTable& t, const CsvRow& r) {
  if (const TorchtitanSource* src = torchtitan_source(field(t, r, "id"))) return read_torchtitan_row(t, r, *src);
  auto f = [&](const char* k) { return field(t, r, k); };
  MegatronRow row = row_identity(t, r);
  auto skip = [&](const std::string& why) {
    row.skip_reason = why;
    return row;
  };
  const bool per_layer = row.metric == "forward_time_ms_per_layer" || row.metric == "backward_time_ms_per_layer" ||
                         row.metric == "fwd_bwd_time_ms_per_layer";
  const bool time_metric = row.metric == "tflops_per_gpu" || row.metric == "iteration_time_s" || row.metric == "mfu" || per_layer;
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
  // Narayanan et al. 2021 ran Megatron-LM before its asynchronous tensor-parallel all-reduce in backward
  // (commit cf7efd4, 2021-08-30, after the paper's examples/sc21 scripts of de7dc40): those block.
  if (row.id.rfind("nar21-", 0) == 0 && row.tp > 1) {
    par["tp_backward_overlap"] = false;
    row.assumptions.push_back("backward tensor-parallel all-reduces synchronous (Megatron-LM of early 2021)");
  }
  y["strategy"]["kind"] = row.strategy;
  if (!zero3) {
    // Megatron-LM's data-parallel gradient reduction: "local" (the default until 2023) all-reduces one
    // contiguous gradient buffer after the whole backward, overlapping nothing; "torch" is PyTorch DDP,
    // 25 MB buckets reduced while the backward runs.
    std::string ddp = f("ddp_impl");
    if (ddp.empty()) ddp = "local", row.assumptions.push_back("--DDP-impl local (Megatron-LM's default; not stated)");
    if (ddp == "local") y["strategy"]["reduce_bucket_size"] = 1e12;
  }
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
  if (per_layer) row.assumptions.push_back("one block in the middle of the step, tensor-parallel collectives included");
  else if (row.metric == "mfu")
    row.published_time_s = korthikanti_model_flops(gb, seq, layers, hidden, vocab) / (row.published / 100 * kA100PeakFp16 * row.gpus);
  return row;
}

// torchtitan's December 2024 H100 tables (FSDP2 with TP, PP, CP, torch.compile and Float8): the rows
// with model parallelism (the FSDP-only ones' tokens/s are in the training corpus) and the peak memory
// per GPU of every row.
MegatronRow read_torchtitan_row(const CsvTable& t, const CsvRow& r, const TorchtitanSource& src) {
  auto f = [&](const char* k) { return field(t, r, k); };
  MegatronRow row = row_identity(t, r);
  row.family = row.metric == "memory_gb_per_gpu" ? src.family : "tt24dec tokens/s (FSDP2 + TP/PP/CP, H100)";
  auto skip = [&](const std::string& why) {
    row.skip_reason = why;
    return row;
  };
  if (row.metric != "tokens_per_s_per_gpu" && row.metric != "memory_gb_per_gpu") return skip(fmt::format("metric {} is not predicted", row.metric));
  row.gpus = int(num(f("gpus")));
  row.tp = int(num(f("tp"))), row.pp = int(num(f("pp")));
  const int cp = int(num(f("cp")));
  // FSDP-only throughput is scored in the training corpus; its peak memory only here.
  if (row.tp * row.pp * cp == 1 && row.metric != "memory_gb_per_gpu")
    return skip("FSDP only: tokens/s scored in the training corpus (validation/data/training-corpus/torchtitan-perf.csv)");
  row.dp = int(num(f("dp")));
  row.strategy = "zero3";
  const std::string notes = f("notes"), table = f("table");
  const double layers = num(f("layers")), seq = num(f("seq_len"));
  double local = num(f("micro_batch")), gb = num(f("global_batch"));
  // Local batch per data-parallel rank: "local batch size N" in the notes when the column is empty.
  if (!(local > 0)) {
    const auto at = notes.find("local batch size ");
    if (at != std::string::npos) local = num(notes.substr(at + 17, notes.find_first_not_of("0123456789", at + 17) - at - 17));
  }
  if (!(local > 0)) return skip("local batch size not stated");
  // torchtitan's defaults (torchtitan/parallelisms/pipelining_utils.py, Dec 2024): a looped
  // (interleaved) schedule gets 2 stages per rank (generate_split_points), and there are as many
  // pipeline micro-batches as stages in total (build_pipeline_schedule: n_microbatches = pp x stages per rank).
  std::string schedule = f("schedule");
  int v = 1;
  if (schedule == "interleaved") v = 2, row.assumptions.push_back("2 stages per rank (torchtitan's default for interleaved; not stated)");
  row.virtual_stages = v;
  double mb = local;
  if (row.pp > 1) {
    const int micro_batches = row.pp * v;
    mb = std::max(1.0, local / micro_batches);
    row.assumptions.push_back(fmt::format("{} pipeline micro-batches of {} (torchtitan's default: one per stage)", micro_batches, int(mb)));
  }
  if (!(gb > 0)) gb = local * row.dp, row.assumptions.push_back(fmt::format("global batch {} (local x dp; not stated)", int(gb)));
  // What the run used, as its table title or its row's notes name it.
  const std::string says = table + " " + notes;
  const bool fp8 = says.find("Float8") != std::string::npos, compile = says.find("compile") != std::string::npos;
  const bool async_tp = table.find("AsyncTP") != std::string::npos || notes.find("AsyncTP") != std::string::npos;
  if (row.gpus > 8) row.assumptions.push_back("8 x 400 Gb/s RDMA taken as InfiniBand NDR (as the corpus does)");

  YAML::Node y;
  y["name"] = row.id;
  YAML::Node inst = y["cluster"]["instance"];
  inst["gpu"] = src.gpu;
  if (*src.gpu_assumption) row.assumptions.push_back(src.gpu_assumption);
  inst["gpus_per_node"] = 8;
  inst["intra_node"]["kind"] = "nvlink";
  inst["intra_node"]["gbytes_per_s"] = 370.8;
  inst["intra_node"]["nvls"] = true;
  inst["network"]["nics"] = 8;
  inst["network"]["gbits_per_nic"] = 400;
  inst["network"]["fabric"] = "infiniband-ndr";
  y["cluster"]["nodes"] = row.gpus / 8;
  YAML::Node m = y["model"];
  m["arch"] = "llama";
  m["layers"] = int64_t(layers), m["hidden"] = int64_t(num(f("hidden"))), m["heads"] = int64_t(num(f("heads")));
  m["kv_heads"] = int64_t(num(f("kv_heads"))), m["ffn"] = int64_t(num(f("ffn"))), m["vocab"] = int64_t(num(f("vocab")));
  YAML::Node tr = y["training"];
  tr["seq_len"] = int64_t(seq), tr["micro_batch"] = int64_t(mb), tr["global_batch"] = int64_t(gb);
  tr["precision"] = fp8 ? "fp8" : "bf16";
  tr["compile"] = compile;
  tr["optimizer_implementation"] = src.optimizer;
  // torchtitan's loss_fn: F.cross_entropy(pred.flatten(0, 1).float(), ...), under DTensor loss_parallel
  // with tp > 1; compiled with the model where the source's torchtitan does that.
  tr["cross_entropy"] = src.loss_compiled && compile ? "compiled" : "torch";
  if (src.loss_compiled && compile) row.assumptions.push_back("the loss compiled with the model");
  const std::string rc = f("recompute");
  // torchtitan's "selective" runs use its per-op policy (selective_ac_option = "op" in the train configs).
  tr["activation_checkpointing"] = rc == "selective" ? "torchtitan-op" : rc.empty() ? "full" : rc;
  YAML::Node par = y["parallelism"];
  par["tp"] = row.tp, par["pp"] = row.pp, par["cp"] = cp;
  if (row.pp > 1) par["schedule"] = v > 1 ? "interleaved" : "1f1b";
  if (v > 1) par["virtual_stages"] = v;
  par["sequence_parallel"] = row.tp > 1;
  if (async_tp && row.tp > 1) par["tp_comm_overlap"] = true;
  y["strategy"]["kind"] = "zero3";
  y["strategy"]["framework"] = "fsdp2";
  y["strategy"]["reduce_dtype"] = "fp32";  // torchtitan's training.mixed_precision_reduce (9dec370: only "float32")
  if (fp8 && notes.find("float8 all-gather") != std::string::npos) y["strategy"]["fp8_all_gather"] = true;  // as the notes say
  YAML::Emitter e;
  e << y;
  row.scenario_yaml = std::string(e.c_str()) + "\n";
  return row;
}

}  // namespace

std::vector<MegatronRow> load_megatron_rows(const std::string& dir) {
  std::vector<MegatronRow> out;
  for (const char* name : {"narayanan2021.csv", "korthikanti2022.csv", "fsdp-tp.csv"}) {
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
    if (row.metric == "memory_gb_per_gpu") {
      // torchtitan logs the caching allocator's reserved peak (max_reserved, GiB): micsim's
      // allocator_reserved_bytes, without the CUDA context (outside the allocator).
      pr.predicted = p.memory.allocator_reserved_bytes / double(1 << 30);
      out.push_back(pr);
      continue;
    }
    SimulationResult r = simulate_analytic(p);
    pr.predicted_time_s = r.iteration_time_s;
    if (row.metric.find("_ms_per_layer") != std::string::npos) {
      // The block's own time: compute and tensor-parallel collectives, without the step's jitter (what
      // the rows test is the layer's cost model).
      PreparedSimulation quiet = p;
      quiet.compute_calibration.jitter_cv = 0;
      r = simulate_analytic(quiet);
      // One block in the middle of the step: from the start of its forward (or backward) to the start of
      // the next block's, so the blocking tensor-parallel collectives (and a recomputation) are included.
      const TaskGraph& g = p.graph;
      const int u = p.workload.first_block() + p.workload.stage_layers / 2;
      double f0 = -1, f1 = -1, b0 = -1, b1 = -1;
      for (size_t i = 0; i < g.size(); ++i) {
        const Task& t = g[i];
        if (t.micro_step != 0) continue;
        const double start = r.timeline.tasks[i].start;
        if (t.kind == TaskKind::Forward && t.unit == u) f0 = start;
        if (t.kind == TaskKind::Forward && t.unit == u + 1) f1 = start;
        if ((t.kind == TaskKind::Recompute || t.kind == TaskKind::Backward) && t.unit == u && b0 < 0) b0 = start;
        if ((t.kind == TaskKind::Recompute || t.kind == TaskKind::Backward) && t.unit == u - 1 && b1 < 0) b1 = start;
      }
      const double fwd = 1e3 * (f1 - f0), bwd = 1e3 * (b1 - b0);
      pr.predicted = row.metric == "forward_time_ms_per_layer" ? fwd : row.metric == "backward_time_ms_per_layer" ? bwd : fwd + bwd;
      out.push_back(pr);
      continue;
    }
    if (row.metric == "tokens_per_s_per_gpu") pr.predicted = r.tokens_per_s / r.world_size;
    else if (row.metric == "iteration_time_s") pr.predicted = r.iteration_time_s;
    else pr.predicted = row.published * row.published_time_s / r.iteration_time_s;  // TFLOP/s and MFU scale as 1/time
    out.push_back(pr);
  }
  return out;
}

}  // namespace micsim
