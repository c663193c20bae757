// Published results reproduced with the shipped default calibration: MosaicML FSDP MFU, the FSDP
// paper's GPT-175B TFLOPS, the A100 GEMM sweep the compute defaults were fitted on.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "models/io/csv.hpp"
#include "models/hardware/catalog.hpp"
#include "validation/collective_validation.hpp"
#include "validation/gemm.hpp"
#include "validation/training_validation.hpp"

using namespace micsim;

static std::string data(const char* f) { return std::string(MICSIM_SOURCE_DIR) + "/validation/data/" + f; }

TEST_CASE("MosaicML FSDP rows: the same parameter counts as published, MFU within 10 % MAPE") {
  auto rows = load_training_dataset(data("mosaicml-fsdp-a100.csv"));
  REQUIRE(rows.size() == 139);
  auto cmp = compare_training(rows);
  REQUIRE(cmp.size() == 139);
  double mape = 0;
  for (const auto& c : cmp) {
    REQUIRE(c.row.published_params.has_value());
    CHECK_MESSAGE(c.params == *c.row.published_params, c.row.id);  // architecture reproduced exactly
    mape += std::fabs(c.error());
  }
  mape /= double(cmp.size());
  CHECK(mape < 0.10);
}

TEST_CASE("FSDP paper GPT-175B: TFLOPS per GPU 10-12 % under the paper's, all of it the jitter term, MiCS claims and T5 are skipped with a reason") {
  // Until 2026-12-04 this case never ran under ctest (its name held a ';', which CMake splits; see
  // tests/main.cpp), and it claimed 10 %. Measured now: micsim -11.7 % (batch 1) and -10.4 % (batch 2)
  // with the fitted Gaussian jitter, which stretches this 256-GPU step's compute by 13 %; without it
  // -0.7 % and -0.3 %. The paper's 17-s steps scale linearly from 128 to 512 GPUs, so jitter at this
  // scale over-charges long steps (docs/model.md sec 2.6). Asserted as it is, so a change shows. Since
  // 2026-12-06 minGPT's eager attention is counted op by op in backward (docs/model.md sec 1.3): -10.1 %
  // and -8.6 %, without jitter +1.0 % and +3.0 % (the last at this bound). Since 2026-12-06 (interference
  // 0.15 -> 0.231 at its published prior, jitter 0.0463 -> 0.0392, docs/model.md sec 2.5): -10.7 % and -8.3 %,
  // without jitter -1.6 % and +1.4 %. Since the refit with each corpus source's AdamW (jitter 0.0392 -> 0.0380,
  // docs/model.md sec 8.2): -10.4 % and -8.0 %.
  auto rows = load_training_dataset(data("training-results.csv"));
  auto cmp = compare_training(rows);
  int fsdp = 0;
  for (const auto& c : cmp)
    if (c.row.id.rfind("fsdp-gpt175b", 0) == 0) {
      ++fsdp;
      CHECK_MESSAGE(c.error() < -0.05, c.row.id << " predicted " << c.predicted);
      CHECK_MESSAGE(c.error() > -0.15, c.row.id << " predicted " << c.predicted);
      CHECK(c.row.metric == "hw_tflops_per_gpu");
      Scenario quiet = parse_scenario_text(c.row.scenario_yaml, "<row>");
      quiet.calibration.jitter_cv = 1e-12;
      const double without_jitter = simulate_analytic(prepare_simulation(quiet)).hw_tflops_per_gpu;
      CHECK_MESSAGE(std::fabs(without_jitter / c.row.published - 1) < 0.03, c.row.id << " without jitter " << without_jitter);
    }
  CHECK(fsdp == 2);
  int skipped = 0;
  for (const auto& r : rows)
    if (!r.skip_reason.empty()) ++skipped;
  CHECK(skipped == 5);
}

TEST_CASE("BERT-Large on V100: micsim with eager attention runs 20-50 % faster than NVIDIA's PyTorch BERT of 2019-2020") {
  // validation/data/v100-bert: NVIDIA DeepLearningExamples BERT-Large pre-training on a DGX-1 (8 x V100 32GB),
  // containers 19.07 and 20.06, whose attention is eager PyTorch (the code bing_bert came from). Measured
  // 2026-12-06: +46 % and +40 % (19.07, 512 and 128 tokens), +25 % and +42 % (20.06); without eager attention
  // +62, +49, +39, +51 %. Asserted as it is, so a change shows: micsim's V100 GEMM and memory terms come from
  // kernel benchmarks (DeepBench) and no V100 training step is fitted; on RoBERTa-10B (hidden 5120) the
  // stage-2 row of DeepSpeed#1069 bounds the same compute at most ~3 % fast (docs/model.md sec 1.3).
  const CsvTable t = load_csv(data("v100-bert/nvidia-dle-bert-pytorch-pretraining.csv"));
  REQUIRE(t.rows.size() == 4);
  for (const auto& row : t.rows) {
    auto f = [&](const char* c) { return row.fields[t.column(c)]; };
    const int seq = std::stoi(f("seq_len")), mb = std::stoi(f("micro_batch")), gpus = std::stoi(f("gpus"));
    auto step = [&](bool eager) {
      const std::string yaml =
          "cluster: {instance: p3dn.24xlarge, nodes: 1}\n"
          "model: {arch: bert, layers: 24, hidden: 1024, heads: 16, ffn: 4096, vocab: 30528, max_position: 512}\n"
          "training: {seq_len: " + std::to_string(seq) + ", micro_batch: " + std::to_string(mb) +
          ", grad_accumulation_steps: 256, precision: fp16, optimizer: lamb, eager_attention: " + (eager ? "true" : "false") + "}\n"
          "strategy: {kind: ddp}\n";
      return micsim::test::run(parse_scenario_text(yaml, "<nvidia-bert>")).samples_per_s / 8;
    };
    const double published = std::stod(f("samples_per_s")) / gpus, eager = step(true), fused = step(false);
    MESSAGE(f("container") << " seq " << seq << " mb " << mb << ": published " << published << ", micsim eager " << eager
                           << " (" << 100 * (eager / published - 1) << " %), fused " << fused);
    CHECK(eager < fused);
    CHECK(eager / published - 1 > 0.20);
    CHECK(eager / published - 1 < 0.50);
  }
}

TEST_CASE("GEMM calibration: the A100 defaults reproduce the published cublasLt sweep") {
  const auto& gpu = HardwareCatalog::builtin().instance("azure-nd96amsr-a100-v4").gpu;
  auto rows = load_gemm_csv(data("gemm/azure-nd-a100-v4-cublaslt-fp16.csv"));
  REQUIRE(rows.size() == 8);
  ComputeCalibration bench = ComputeCalibration::defaults_for(gpu);
  bench.gemm_scale = 1.0;  // a kernel benchmark, not a training step (its sustained scale is fitted on training runs)
  ComputeModel m(gpu, Precision::FP16, bench);
  std::vector<double> err;
  for (const auto& r : rows) err.push_back(m.gemm_time(r.shape) / r.time_s - 1);
  auto s = summarize_errors(err);
  CHECK(s.median_abs < 0.05);
  CHECK(s.p90_abs < 0.10);
  // Fitting from other starting values finds the same terms.
  GemmFit fit = fit_gemm(gpu, rows);
  CHECK(*fit.calibration.gemm_efficiency == rel_approx(0.812).epsilon(0.02));
}

TEST_CASE("micsim calibrate --gemm writes compute terms a scenario loads, bad GEMM CSVs are errors with a line") {
  using micsim::test::run_cli;
  using micsim::test::temp_file;
  std::string out = micsim::test::temp_path("gemm.yaml");
  auto r = run_cli("calibrate --gemm " + data("gemm/azure-nd-a100-v4-cublaslt-fp16.csv") + " --instance p4de.24xlarge --out " + out);
  REQUIRE(r.status == 0);
  Calibration c = load_calibration(out);
  CHECK(c.gemm_efficiency.has_value());
  CHECK_FALSE(c.inter_latency_s.has_value());
  auto bad = temp_file("gemm.csv", "m,n,k,tflops\n1024,1024,1024,120\n1024,x,1024,100\n");
  auto rb = run_cli("calibrate --gemm " + bad + " --instance p4d.24xlarge --out " + micsim::test::temp_path("refused.yaml"));
  CHECK(rb.status == 2);
  CHECK(rb.output.find(":3") != std::string::npos);
  auto shapes = run_cli("shapes " + std::string(MICSIM_SOURCE_DIR) + "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml", false);
  CHECK(shapes.status == 0);
  CHECK(shapes.output.rfind("name,m,n,k,batch,count\n", 0) == 0);
  CHECK(shapes.output.find("block_fwd_qkv,4096,7680,2560,1,127") != std::string::npos);
}
