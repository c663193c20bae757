// training.attention_kernel: each fused attention kernel at its own measured efficiency (the
// FlashAttention-2 class, FlashAttention-3, cuDNN, FlashAttention in Triton).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "helpers.hpp"
#include "models/hardware/catalog.hpp"
#include "validation/kernel_fit.hpp"

using namespace micsim;
using micsim::test::run;
using micsim::test::run_cli;
using micsim::test::scenario;
using micsim::test::temp_file;

namespace {

std::string data_dir() { return std::string(MICSIM_SOURCE_DIR) + "/validation/data"; }

// Llama-3-8B at 8k on one p5 node: attention is a fifth of the FLOPs, so the kernel shows.
Scenario llama8k(std::vector<std::string> sets) {
  sets.push_back("training.precision=bf16");
  return scenario("p5.48xlarge", 1, "llama3-8b", "zero3", 1, 8, sets, 8192);
}

// One pass with attention only: its time is attention FLOPs over the kernel's rate.
double attention_time(const ComputeCalibration& c, const GpuSpec& gpu, bool backward) {
  PassWork w;
  w.attention_flops = 1e15;
  ComputeCalibration k = c;
  k.kernel_overhead_s = 0, k.host_launch_s = 0;
  return ComputeModel(gpu, Precision::BF16, k).pass_time(w, backward, true);
}

}  // namespace

TEST_CASE("attention kernels: the H100 terms are the medians of the published rows of each kernel, lengths taken out") {
  const GpuSpec& h100 = HardwareCatalog::builtin().instance("p5.48xlarge").gpu;
  const KernelFit fit = fit_kernels(h100, data_dir());
  // FlashAttention-2 class: the five SDPA flash-backend forward rows at head size 128 (tritonbench
  // d5f0a12, non-causal, 1k-16k), each over its length factor S / (S + half): the median in closed form.
  REQUIRE(fit.calibration.attention_efficiency.has_value());
  const double half = fit.fa2().efficiency.seq_half.full;
  std::vector<double> implied;
  const std::vector<std::pair<double, double>> sdpa = {{1024, 287.457}, {2048, 293.208}, {4096, 298.428}, {8192, 287.696}, {16384, 304.199}};
  for (const auto& [seq, tflops] : sdpa) implied.push_back(tflops / 989 * (seq + half) / seq);
  std::sort(implied.begin(), implied.end());
  CHECK(*fit.calibration.attention_efficiency == rel_approx(implied[2]).epsilon(1e-9));
  CHECK(fit.fa2().forward_rows == 5);
  CHECK(half < 100);  // SDPA's flash backend on H100 is as fast at 1k as at 16k without a mask
  CHECK_FALSE(fit.calibration.attention_backward_efficiency.has_value());  // no FA2 backward row
  // The catalog carries those fits (3 decimals; lengths to the token).
  CHECK(h100.attention_efficiency == rel_approx(*fit.calibration.attention_efficiency).epsilon(0.002));
  CHECK(h100.attention_seq_half.causal == rel_approx(fit.fa2().efficiency.seq_half.causal).epsilon(1e-9));
  CHECK(h100.attention_seq_half.full == rel_approx(half).epsilon(1e-9));
  REQUIRE(fit.attention_kernels.count(AttentionKernel::FA3) == 1);
  const AttentionKernelFit& fa3 = fit.attention_kernels.at(AttentionKernel::FA3);
  REQUIRE(h100.attention_kernels.count(AttentionKernel::FA3) == 1);
  CHECK(h100.attention_kernels.at(AttentionKernel::FA3).forward == rel_approx(fa3.efficiency.forward).epsilon(0.002));
  CHECK(h100.attention_kernels.at(AttentionKernel::FA3).backward == rel_approx(fa3.efficiency.backward).epsilon(0.002));
  CHECK(h100.attention_kernels.at(AttentionKernel::FA3).seq_half.causal == rel_approx(fa3.efficiency.seq_half.causal));
  // Hopper-native kernels are ~1.6x the Ampere-code class on the same die.
  CHECK(fa3.efficiency.forward / *fit.calibration.attention_efficiency > 1.4);
  const GpuSpec& h200 = HardwareCatalog::builtin().instance("p5e.48xlarge").gpu;
  const KernelFit fit200 = fit_kernels(h200, data_dir());
  REQUIRE(fit200.attention_kernels.count(AttentionKernel::CuDNN) == 1);
  const AttentionKernelFit& cudnn = fit200.attention_kernels.at(AttentionKernel::CuDNN);
  CHECK(h200.attention_kernels.at(AttentionKernel::CuDNN).forward == rel_approx(cudnn.efficiency.forward).epsilon(0.002));
  CHECK(h200.attention_kernels.at(AttentionKernel::CuDNN).seq_half.causal == rel_approx(cudnn.efficiency.seq_half.causal));
  CHECK(h200.attention_efficiency == h100.attention_efficiency);  // FA2 as H100: same compute die
}

TEST_CASE("attention kernels: the rate grows with sequence length as the published sweeps do, causal masks slower") {
  // NVIDIA's cuDNN SDPA sweep on H200 (cudnn-frontend benchmark, bf16, head size 128, causal forward):
  // 484, 591, 644, 673, 688 TFLOP/s at 2k ... 32k. The catalog's two terms give every point within 6 %.
  const GpuSpec& h200 = HardwareCatalog::builtin().instance("p5e.48xlarge").gpu;
  const AttentionKernelEfficiency& cudnn = h200.attention_kernels.at(AttentionKernel::CuDNN);
  const std::vector<std::pair<double, double>> sweep = {{2048, 484}, {4096, 591}, {8192, 644}, {16384, 673}, {32768, 688}};
  for (const auto& [seq, tflops] : sweep) {
    const double predicted = cudnn.forward * cudnn.seq_half.factor(seq, true) * 989;
    CHECK_MESSAGE(std::fabs(predicted / tflops - 1) < 0.06, seq << ": " << predicted << " TFLOP/s");
  }
  // In the compute model: time per attention FLOP at 1k over that at 16k is the ratio of the factors,
  // larger under a causal mask (its tiles attend to half the keys, the diagonal ones partly masked).
  const GpuSpec& h100 = HardwareCatalog::builtin().instance("p5.48xlarge").gpu;
  const ComputeCalibration c = ComputeCalibration::defaults_for(h100);
  auto per_flop = [&](int64_t seq, bool causal) {
    PassWork w;
    w.attention_flops = 1e15, w.attention_seq = seq, w.causal = causal;
    ComputeCalibration k = c;
    k.kernel_overhead_s = 0, k.host_launch_s = 0;
    return ComputeModel(h100, Precision::BF16, k).pass_time(w, false, true);
  };
  const AttentionSeqHalf& h = h100.attention_seq_half;
  CHECK(per_flop(1024, true) / per_flop(16384, true) == rel_approx((1024 + h.causal) / 1024 * 16384 / (16384 + h.causal)));
  CHECK(per_flop(1024, false) / per_flop(16384, false) == rel_approx((1024 + h.full) / 1024 * 16384 / (16384 + h.full)));
  CHECK(per_flop(1024, true) / per_flop(16384, true) > per_flop(1024, false) / per_flop(16384, false));
  // Unknown length (0): the long-sequence rate, as before the length terms existed.
  CHECK(per_flop(0, true) * (1024 + h.causal) / 1024 == rel_approx(per_flop(1024, true)));
}

TEST_CASE("attention kernels: FlashAttention in Triton runs at FA2 / 1.4 forward and FA2 / 2 backward, times its constant") {
  const GpuSpec& a100 = HardwareCatalog::builtin().instance("p4de.24xlarge").gpu;
  ComputeCalibration fa2 = ComputeCalibration::defaults_for(a100);
  ComputeCalibration triton = ComputeCalibration::defaults_for(a100, AttentionKernel::Triton);
  for (double k : {1.0, 0.83}) {
    fa2.triton_attention_scale = triton.triton_attention_scale = k;
    CHECK(attention_time(triton, a100, false) / attention_time(fa2, a100, false) == rel_approx(1.4 * k));
    CHECK(attention_time(triton, a100, true) / attention_time(fa2, a100, true) == rel_approx(2.0 * k));
  }
  CHECK(triton.source.find("arXiv 2307.08691") != std::string::npos);
}

TEST_CASE("attention kernels: fa3 and cuDNN faster than fa2 on Hopper and close to each other, Triton slower, fa2 is the default to the bit") {
  const double t_default = run(llama8k({})).iteration_time_s;
  const double fa2 = run(llama8k({"training.attention_kernel=fa2"})).iteration_time_s;
  const double fa3 = run(llama8k({"training.attention_kernel=fa3"})).iteration_time_s;
  const double cudnn = run(llama8k({"training.attention_kernel=cudnn"})).iteration_time_s;
  const double triton = run(llama8k({"training.attention_kernel=triton"})).iteration_time_s;
  CHECK(fa2 == t_default);
  CHECK(fa3 < fa2);
  CHECK(cudnn < fa2);
  // At 8k under a causal mask the two Hopper-native kernels are close, as published: FA3 685 TFLOP/s
  // forward (tritonbench, H100), cuDNN 644 forward and 541 backward against FA3's 539 (H200, same die).
  CHECK(std::fabs(cudnn / fa3 - 1) < 0.03);
  CHECK(triton > fa2);
  // The kernel changes time, not FLOPs or memory.
  CHECK(run(llama8k({"training.attention_kernel=fa3"})).memory.peak_bytes == run(llama8k({})).memory.peak_bytes);
}

TEST_CASE("attention kernels: a kernel not measured on the GPU runs at its FA2 terms and says so, bad keys are errors") {
  const Scenario fa2 = scenario("p4de.24xlarge", 1, "llama2-7b", "zero3", 1, 8, {"training.precision=bf16"}, 4096);
  const Scenario cudnn = scenario("p4de.24xlarge", 1, "llama2-7b", "zero3", 1, 8,
                                  {"training.precision=bf16", "training.attention_kernel=cudnn"}, 4096);
  const auto r = run(cudnn);
  CHECK(r.iteration_time_s == run(fa2).iteration_time_s);
  bool said = false;
  for (const auto& s : r.sources) said |= s.find("no cudnn measurement for A100") != std::string::npos;
  CHECK(said);
  CHECK_THROWS_WITH_AS(scenario("p4de.24xlarge", 1, "llama2-7b", "zero3", 1, 8, {"training.attention_kernel=fa3"}, 4096),
                       doctest::Contains("Hopper GPUs only"), InputError);
  CHECK_THROWS_WITH_AS(scenario("p5.48xlarge", 1, "llama2-7b", "zero3", 1, 8,
                                {"training.flash_attention=false", "training.attention_kernel=fa3"}, 4096),
                       doctest::Contains("flash_attention: true"), InputError);
  // From the command line: exit status 2, the file, line and key.
  const std::string f = temp_file("kernel.yaml",
                                  "cluster: {instance: p5.48xlarge, nodes: 1}\nmodel: {preset: llama2-7b}\n"
                                  "training: {seq_len: 4096, micro_batch: 1, global_batch: 8, attention_kernel: flash9}\n"
                                  "strategy: {kind: zero3}\n");
  const auto c = run_cli("simulate " + f);
  CHECK(c.status == 2);
  CHECK(c.output.find("kernel.yaml:3") != std::string::npos);
  CHECK(c.output.find("attention_kernel") != std::string::npos);
}

TEST_CASE("attention kernels: a calibration's attention terms replace the named kernel's, with a warning") {
  const std::string cal = temp_file("kernel-cal.yaml",
                                    "instance: p5.48xlarge\ncompute: {attention_efficiency: 0.3, attention_backward_efficiency: 0.3}\n");
  auto yaml = [&](const std::string& kernel) {
    return "cluster: {instance: p5.48xlarge, nodes: 1}\nmodel: {preset: llama3-8b}\n"
           "training: {seq_len: 8192, micro_batch: 1, global_batch: 8, precision: bf16, attention_kernel: " + kernel + "}\n"
           "strategy: {kind: zero3}\ncalibration: " + cal + "\n";
  };
  const Scenario fa3 = parse_scenario_text(yaml("fa3"), "<test>"), fa2 = parse_scenario_text(yaml("fa2"), "<test>");
  bool warned = false;
  for (const auto& w : fa3.warnings) warned |= w.find("replace the fa3 kernel") != std::string::npos;
  CHECK(warned);
  CHECK(fa2.warnings.empty());
  // The calibration wins: both run attention at 0.3 of peak, forward and backward.
  CHECK(run(fa3).iteration_time_s == run(fa2).iteration_time_s);
}
