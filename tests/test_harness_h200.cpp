// micsim's own measurements on one H200 (validation/data/harness-h200-2026-12-04, README there): the
// harness's GEMM sweep and HBM copy, PyTorch SDPA attention, and whole FSDP2 training steps.
// They are not among the rows the catalog was fitted on (calibrate --kernels validation/data reads
// validation/data/{gemm,attention,hbm} only), so the catalog's H200 terms meet them out of sample.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "helpers.hpp"
#include <nlohmann/json.hpp>

#include "models/compute/compute_model.hpp"
#include "models/hardware/catalog.hpp"
#include "models/io/csv.hpp"
#include "validation/collective_validation.hpp"
#include "validation/kernel_fit.hpp"

using namespace micsim;

namespace {

std::string bundle() { return std::string(MICSIM_SOURCE_DIR) + "/validation/data/harness-h200-2026-12-04"; }

}  // namespace

TEST_CASE("harness bundle H200: the catalog's GEMM, cuDNN attention and HBM terms predict micsim's own H200 measurements") {
  const GpuSpec& h200 = HardwareCatalog::builtin().instance("p5e.48xlarge").gpu;
  const KernelFit fit = fit_kernels(h200, bundle());
  auto kinds = errors_by_kind(fit);
  REQUIRE(kinds["gemm"].rows == 16);  // the Kempner 13B scenario's 14 shapes + 4096^3 + 8192^3
  REQUIRE(kinds["attention cudnn"].rows == 24);
  REQUIRE(kinds["attention fa2"].rows == 24);
  REQUIRE(kinds["hbm"].rows == 1);
  // GEMM: the catalog's H200 16-bit terms are the H100's (no H200 sweep was published); measured
  // 713-915 TFLOP/s. Median |error| 3.0 %, mean -1.5 % (catalog a little fast).
  CHECK(kinds["gemm"].catalog.median_abs < 0.05);
  CHECK(std::fabs(kinds["gemm"].catalog.mean_signed) < 0.03);
  // cuDNN SDPA: the catalog's terms come from NVIDIA's cudnn-frontend H200 sweep (2k-32k); these rows
  // go down to 512 tokens. Median |error| 6.0 %, mean -2.8 %.
  CHECK(kinds["attention cudnn"].catalog.median_abs < 0.08);
  CHECK(std::fabs(kinds["attention cudnn"].catalog.mean_signed) < 0.05);
  // Device copy: 4251 GB/s measured, 0.886 of 4.8 TB/s; the catalog's 0.85 (BabelStream, Azure) is 4 % slow.
  CHECK(kinds["hbm"].catalog.mean_signed == rel_approx(4251.06 / 4800 / h200.hbm_efficiency - 1).epsilon(1e-9));
  CHECK(std::fabs(kinds["hbm"].catalog.mean_signed) < 0.06);
  // Errors are in time: a kernel that ran faster than the catalog's rate is predicted slow (positive),
  // whatever its kind. The one GEMM above 900 TFLOP/s (5120 x 5120 x 16384, the file's first row), and
  // the FlashAttention-2-class rows (the catalog's FA2 terms on H200 are the H100's, 0.302 of peak;
  // PyTorch 2.11's flash backend ran at 0.33-0.36 forward at 4k+), are predicted slow.
  const auto first_gemm = std::find_if(fit.rows.begin(), fit.rows.end(), [](const KernelRowError& r) { return r.kind == "gemm"; });
  REQUIRE(first_gemm != fit.rows.end());
  CHECK(first_gemm->what == "gemm 5120x5120x16384 bf16");
  CHECK(first_gemm->catalog_error > 0.10);
  CHECK(kinds["attention fa2"].catalog.mean_signed > 0.05);
  // The fit on these rows (in sample) is closer than the catalog, as a fit must be.
  CHECK(kinds["attention fa2"].fitted.median_abs < kinds["attention fa2"].catalog.median_abs);
}

namespace {

// One measured training step of the bundle (train-step.csv) and micsim's prediction of it.
struct MeasuredStep {
  std::string name;
  double step_s = 0, allocated_gib = 0;
  double predicted_s = 0, predicted_allocated_gib = 0;
};

std::vector<MeasuredStep> measured_steps() {
  const CsvTable t = load_csv(bundle() + "/train-step.csv");
  std::vector<MeasuredStep> out;
  for (const auto& row : t.rows) {
    auto cell = [&](const char* c) { return row.fields[size_t(t.column(c))]; };
    MeasuredStep m{cell("name"), std::stod(cell("step_s")), std::stod(cell("peak_allocated_gib"))};
    const auto r = micsim::test::run_cli_stdout("--catalog " + bundle() + "/catalog.yaml simulate " + bundle() + "/runs/" + m.name +
                                                ".yaml --json - -q");
    REQUIRE_MESSAGE(r.status == 0, m.name);
    const auto j = nlohmann::json::parse(r.output);
    m.predicted_s = j["iteration_time_s"].get<double>();
    m.predicted_allocated_gib = j["memory"]["peak_bytes_per_gpu"].get<double>() / double(1ull << 30);
    out.push_back(m);
  }
  return out;
}

}  // namespace

TEST_CASE("harness bundle H200: micsim predicts its own measured FSDP2 training steps within 15 %, memory within 9 % but one") {
  // Eight Llama-shaped runs on one H200 (train_step.py: FSDP2 at world size 1, bf16 with fp32 master
  // weights, AdamW foreach or fused, F.cross_entropy on fp32 logits; 1.5 B and 3.6 B parameters, 2k-8k
  // tokens, with and without full recompute, cuDNN and flash attention, eager and compiled). No
  // constant of micsim was fitted on them. Step time: micsim 4.0-14.2 % fast (mean -9.7 %; compiled
  // with fused AdamW the most). Was 3.5-13.6 % (mean -9.2 %, bound 14 %) until 2026-12-06: the corpus
  // refit with compute/communication interference at its published prior (0.15 -> 0.231) raised
  // Hopper's sustained-GEMM scale 0.904 -> 0.913, and these world-size-1 runs overlap no collective,
  // so they only get the faster GEMMs; the bound moved to 15 % with it. FSDP2 at one rank still casts each parameter, copies out of the gather
  // buffer and concatenates the gradients (16.8 ms of such kernels in a 278 ms step,
  // train-step-kernels.csv), which micsim does not model at world size 1.
  const auto steps = measured_steps();
  REQUIRE(steps.size() == 8);
  double mean = 0;
  for (const auto& m : steps) {
    const double e = m.predicted_s / m.step_s - 1;
    CHECK_MESSAGE(std::fabs(e) < 0.15, m.name << ": predicted " << m.predicted_s << " s, measured " << m.step_s << " s");
    mean += e / double(steps.size());
    const double memory_error = m.predicted_allocated_gib / m.allocated_gib - 1;
    if (m.name == "l3b-s4096-fullac-cudnn-fusedadam") {
      // Peak allocated -8.9 ... +7.9 % on the other seven. Here micsim is 21 % high (68.7 against
      // 56.8 GiB): it holds the gradients (4 bytes per parameter, 13.4 GiB) through the loss, whose
      // transient (11.7 GiB of fp32 logits work) sets its peak, while set_to_none zero_grad leaves no
      // gradient allocated until the backward reaches each block. With foreach AdamW the optimizer's
      // temporaries (4 bytes per parameter) set the measured peak instead, and micsim meets it.
      CHECK(memory_error > 0.15);
      continue;
    }
    CHECK_MESSAGE(std::fabs(memory_error) < 0.09, m.name << ": predicted " << m.predicted_allocated_gib << " GiB, measured " << m.allocated_gib << " GiB");
  }
  CHECK(mean == rel_approx(-0.097).epsilon(0.1));
  // runs.csv (what `calibrate --runs` reads) holds the same measurements as train-step.csv, row for row.
  const CsvTable runs = load_csv(bundle() + "/runs.csv");
  REQUIRE(runs.rows.size() == steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    CHECK(runs.rows[i].fields[size_t(runs.column("scenario"))] == "runs/" + steps[i].name + ".yaml");
    CHECK(std::stod(runs.rows[i].fields[size_t(runs.column("step_time_s"))]) == rel_approx(steps[i].step_s).epsilon(1e-6));
  }
  // The user's flow on them: the in-step GEMM and attention scales fitted on seven runs predict the
  // eighth within a few per cent (MAPE 2.3 % held out, against 10.2 % with the catalog's constants).
  const auto cal = micsim::test::run_cli("--catalog " + bundle() + "/catalog.yaml calibrate --runs " + bundle() +
                                         "/runs.csv --instance harness-h200-1gpu --out " + micsim::test::temp_path("h200-runs.yaml"));
  REQUIRE_MESSAGE(cal.status == 0, cal.output);
  const size_t at = cal.output.find("held out (each run left out in turn)");
  REQUIRE(at != std::string::npos);
  const double held_out_mape = std::stod(cal.output.substr(cal.output.find("MAPE", at) + 4)) / 100;
  CHECK(held_out_mape < 0.04);
  const size_t before = cal.output.find("before (catalog / base constants)");
  REQUIRE(before != std::string::npos);
  CHECK(std::stod(cal.output.substr(cal.output.find("MAPE", before) + 4)) / 100 > 2 * held_out_mape);
  // The 8B model at 4k tokens ran out of memory there (138.2 GiB allocated of 139.8): micsim says it
  // does not fit.
  const auto oom = micsim::test::run_cli_stdout("--catalog " + bundle() + "/catalog.yaml simulate " + bundle() +
                                                "/runs/l8b-s4096-fullac-cudnn-oom.yaml --json - -q");
  REQUIRE(oom.status == 0);
  CHECK(nlohmann::json::parse(oom.output)["fits_in_memory"] == false);
}

TEST_CASE("optimizer_implementation foreach: PyTorch's multi-tensor AdamW moves 84 bytes per parameter, as measured on H200") {
  const GpuSpec& h200 = HardwareCatalog::builtin().instance("p5e.48xlarge").gpu;
  ComputeCalibration c = ComputeCalibration::defaults_for(h200);
  c.kernel_overhead_s = 0;
  const ComputeModel m(h200, Precision::BF16, c);
  const double fused = m.optimizer_time(1498482688, Optimizer::Adam);
  const double foreach = m.optimizer_time(1498482688, Optimizer::Adam, OptimizerImplementation::Foreach);
  CHECK(foreach / fused == rel_approx(84.0 / 32.0));
  CHECK(m.optimizer_time(1498482688, Optimizer::Sgd, OptimizerImplementation::Foreach) ==
        rel_approx(m.optimizer_time(1498482688, Optimizer::Sgd)));  // modelled for Adam only
  // The profiler's optimizer kernels (multi_tensor_apply) per step, train-step-profile.csv: 32.0 ms for
  // the 1.50 B model, 76.8 ms for the 3.61 B one. The fused kernel's bytes would give 40 % of that.
  const CsvTable t = load_csv(bundle() + "/train-step-profile.csv");
  std::map<std::string, double> measured_ms;
  for (const auto& row : t.rows)
    if (row.fields[size_t(t.column("kind"))] == "optimizer")
      measured_ms[row.fields[size_t(t.column("config"))]] = std::stod(row.fields[size_t(t.column("ms_per_step"))]);
  REQUIRE(measured_ms.count("l1b-s2048-cudnn") == 1);
  REQUIRE(measured_ms.count("l3b-s4096-fullac-cudnn") == 1);
  CHECK(foreach * 1e3 / measured_ms["l1b-s2048-cudnn"] == rel_approx(1.0).epsilon(0.08));
  CHECK(m.optimizer_time(3606752256, Optimizer::Adam, OptimizerImplementation::Foreach) * 1e3 / measured_ms["l3b-s4096-fullac-cudnn"] ==
        rel_approx(1.0).epsilon(0.08));
  CHECK(fused * 1e3 < 0.45 * measured_ms["l1b-s2048-cudnn"]);
  // The same runs with fused AdamW (--optimizer fused): 12.7 and 30.1 ms, the fused kernel's 32 bytes per
  // parameter (micsim's default) within 8 %.
  REQUIRE(measured_ms.count("l1b-s2048-cudnn-fusedadam") == 1);
  CHECK(fused * 1e3 / measured_ms["l1b-s2048-cudnn-fusedadam"] == rel_approx(1.0).epsilon(0.08));
  CHECK(m.optimizer_time(3606752256, Optimizer::Adam) * 1e3 / measured_ms["l3b-s4096-fullac-cudnn-fusedadam"] ==
        rel_approx(1.0).epsilon(0.08));
}
