// GPU power limits (catalog tdp_w / power_limit_w / power_curve, scenario cluster.gpu_power_limit_w):
// compute-bound kernels slow down along the measured curve, HBM-bound ones do not.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "models/hardware/catalog.hpp"
#include "models/hardware/power_limit.hpp"

using namespace micsim;
using micsim::test::run;
using micsim::test::run_cli;
using micsim::test::scenario;
using micsim::test::temp_file;

namespace {

// Llama-3-8B on one p5 node (H100 SXM, 700 W TDP), optionally under a power limit.
Scenario llama_p5(const std::string& limit = "") {
  std::vector<std::string> sets = {"training.precision=bf16"};
  if (!limit.empty()) sets.push_back("cluster.gpu_power_limit_w=" + limit);
  return scenario("p5.48xlarge", 1, "llama3-8b", "zero3", 1, 8, sets, 4096);
}

std::string input_error(const std::vector<std::string>& sets) {
  try {
    scenario("p5.48xlarge", 1, "llama3-8b", "zero3", 1, 8, sets, 4096);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("power curve: the measured points are returned exactly and the rate is linear between them") {
  GpuSpec g = HardwareCatalog::builtin().instance("p5.48xlarge").gpu;
  REQUIRE(g.tdp_w == 700);
  REQUIRE(g.power_curve.size() == 6);
  CHECK(power_limited_compute_rate(g) == 1.0);  // no limit: the TDP
  // Mayr et al. 2026 (arXiv 2603.16164) Table 4: 27,705.3 of 30,271.0 tokens/s at 500 W, 24,853.4 at 400 W.
  g.power_limit_w = 500;
  CHECK(power_limited_compute_rate(g) == rel_approx(27705.3 / 30271.0).epsilon(1e-3));
  g.power_limit_w = 450;  // half way between 400 W and 500 W
  CHECK(power_limited_compute_rate(g) == rel_approx(0.5 * (24853.4 + 27705.3) / 30271.0).epsilon(1e-3));
  g.power_limit_w = 700;
  CHECK(power_limited_compute_rate(g) == 1.0);
  // Never faster at a lower limit.
  double last = 0;
  for (double w = 200; w <= 700; w += 25) {
    g.power_limit_w = w;
    const double r = power_limited_compute_rate(g);
    CHECK(r >= last);
    last = r;
  }
}

TEST_CASE("power limit: at the TDP the step is today's, below it GEMM-bound work slows, HBM-bound kernels keep their rate") {
  const SimulationResult base = run(llama_p5());
  const SimulationResult at_tdp = run(llama_p5("700"));
  CHECK(at_tdp.iteration_time_s == base.iteration_time_s);
  const SimulationResult capped = run(llama_p5("500"));
  const SimulationResult harder = run(llama_p5("400"));
  CHECK(capped.iteration_time_s > base.iteration_time_s);
  CHECK(harder.iteration_time_s > capped.iteration_time_s);
  // The step slows by less than the compute-bound rate falls: its HBM-bound kernels, optimizer and
  // exposed communication do not scale with the SM clock.
  const double rate = 27705.3 / 30271.0;
  CHECK(capped.iteration_time_s < base.iteration_time_s / rate);
  CHECK(capped.iteration_time_s > base.iteration_time_s * 1.03);

  const GpuSpec& h100 = HardwareCatalog::builtin().instance("p5.48xlarge").gpu;
  GpuSpec limited = h100;
  limited.power_limit_w = 500;
  ComputeCalibration full = ComputeCalibration::defaults_for(h100), cut = ComputeCalibration::defaults_for(limited);
  CHECK(cut.power_rate == rel_approx(rate).epsilon(1e-3));
  PassWork gemm_only, hbm_only;
  gemm_only.gemms.push_back({8192, 8192, 8192, 1});
  hbm_only.elementwise_bytes = 1e10;
  const ComputeModel m_full(h100, Precision::BF16, full), m_cut(limited, Precision::BF16, cut);
  CHECK(m_cut.pass_time(hbm_only, false, true) == m_full.pass_time(hbm_only, false, true));
  // A compute-bound GEMM: its time less the fixed per-GEMM overhead grows by exactly 1 / rate.
  const double overhead = full.gemm_overhead_s;
  const double ratio = (m_cut.pass_time(gemm_only, false, true) - overhead) / (m_full.pass_time(gemm_only, false, true) - overhead);
  CHECK(std::fabs(ratio * cut.power_rate - 1) < 1e-9);
}

TEST_CASE("power limit: Meta's Grand Teton H100 runs at its stated 500 W, and says so") {
  const GpuSpec& gt = *HardwareCatalog::builtin().find_gpu("H100-HBM2e-96GB");
  CHECK(gt.power_limit_w == 500);
  CHECK(gt.tdp_w == 700);  // the SXM part's TDP and curve (kernels_as)
  CHECK(power_limited_compute_rate(gt) == rel_approx(0.915).epsilon(1e-3));
  const std::string yaml = temp_file("gt.yaml", R"(cluster:
  instance: {gpu: H100-HBM2e-96GB, gpus_per_node: 8, intra_node: {kind: nvlink, gbytes_per_s: 370.8},
             network: {nics: 8, gbits_per_nic: 400, fabric: infiniband-ndr}}
  nodes: 1
model: {preset: llama3-8b}
training: {seq_len: 4096, micro_batch: 1, global_batch: 8, precision: bf16}
strategy: {kind: zero3}
)");
  auto r = run_cli("simulate " + yaml);
  CHECK(r.status == 0);
  CHECK(r.output.find("91.5 % of their rate: 500 W limit of 700 W TDP (Mayr et al. 2026") != std::string::npos);
  // `catalog show` states the limit, the TDP, the rate and where the curve comes from.
  auto shown = run_cli("catalog show H100-HBM2e-96GB --json -", false);
  CHECK(shown.status == 0);
  CHECK(shown.output.find("\"power_limit_w\": 500.0") != std::string::npos);
  CHECK(shown.output.find("\"tdp_w\": 700.0") != std::string::npos);
  CHECK(shown.output.find("\"compute_rate_at_power_limit\": 0.91") != std::string::npos);
  CHECK(shown.output.find("arXiv 2603.16164") != std::string::npos);
  // The user can lift it to the TDP: faster.
  auto lifted = run_cli("simulate " + yaml + " --set cluster.gpu_power_limit_w=700 --json -", false);
  auto capped = run_cli("simulate " + yaml + " --json -", false);
  REQUIRE(lifted.status == 0);
  REQUIRE(capped.status == 0);
  auto step = [](const std::string& out) { return nlohmann::json::parse(out).at("iteration_time_s").get<double>(); };
  CHECK(step(lifted.output) < step(capped.output));
}

TEST_CASE("power limit errors: above the TDP, below the lowest measured point, a GPU with no curve, exit status 2") {
  CHECK(input_error({"cluster.gpu_power_limit_w=800"}).find("expected a power limit from 200 W (the lowest measured point) to 700 W") !=
        std::string::npos);
  CHECK(input_error({"cluster.gpu_power_limit_w=150"}).find("got 150 W") != std::string::npos);
  CHECK(input_error({"cluster.gpu_power_limit_w=500"}).empty());
  std::string a100;
  try {
    scenario("p4d.24xlarge", 1, "llama3-8b", "zero3", 1, 8, {"cluster.gpu_power_limit_w=300"}, 4096);
  } catch (const InputError& e) {
    a100 = e.what();
  }
  CHECK(a100.find("gpu_power_limit_w") != std::string::npos);
  CHECK(a100.find("A100") != std::string::npos);
  const std::string bad = temp_file("bad-power.yaml", "cluster: {instance: p5.48xlarge, nodes: 1, gpu_power_limit_w: 900}\n"
                                                      "model: {preset: llama3-8b}\ntraining: {seq_len: 512, micro_batch: 1, global_batch: 8}\n"
                                                      "strategy: {kind: zero3}\n");
  auto r = run_cli("simulate " + bad);
  CHECK(r.status == 2);
  CHECK(r.output.find("bad-power.yaml:1") != std::string::npos);
  // A catalog curve must end at the TDP and never fall as the limit rises.
  const std::string cat = temp_file("bad-curve.yaml", "gpus:\n  X:\n    arch: hopper\n    memory_gib: 80\n    peak_tflops: {bf16: 989}\n"
                                                      "    hbm_tbytes_per_s: 3.35\n    tdp_w: 700\n    power_curve: [[0.5, 0.9], [0.8, 0.8], [1.0, 1.0]]\n");
  auto c = run_cli("--catalog " + cat + " simulate " + bad);
  CHECK(c.status == 2);
  CHECK(c.output.find("throughput never falling") != std::string::npos);
}

TEST_CASE("power limit: kernel terms calibrated on the user's GPUs are not lowered a second time") {
  Calibration cal;
  cal.gemm_efficiency = 0.7;
  GpuSpec g = HardwareCatalog::builtin().instance("p5.48xlarge").gpu;
  g.power_limit_w = 500;
  ComputeCalibration c = ComputeCalibration::defaults_for(g);
  REQUIRE(c.power_rate < 1.0);
  cal.apply(c);
  CHECK(c.power_rate == 1.0);
  Calibration scale_only;
  scale_only.gemm_scale = 0.9;  // a sustained-step scale is not a kernel measurement
  ComputeCalibration d = ComputeCalibration::defaults_for(g);
  scale_only.apply(d);
  CHECK(d.power_rate < 1.0);
}
