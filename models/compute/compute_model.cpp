#include "models/compute/compute_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "models/hardware/power_limit.hpp"

namespace micsim {

const char* to_string(Optimizer o) {
  switch (o) {
    case Optimizer::Adam: return "adam";
    case Optimizer::Lamb: return "lamb";
    case Optimizer::Sgd: return "sgd";
  }
  return "?";
}

// FlashAttention-2 against FlashAttention in Triton on A100 (Dao 2023, arXiv 2307.08691 sec. 4.1:
// "around 1.3-1.5x faster ... in the forward pass and around 2x faster in the backward pass").
constexpr double kTritonFlashForwardRatio = 1.4, kTritonFlashBackwardRatio = 2.0;

ComputeCalibration ComputeCalibration::defaults_for(const GpuSpec& gpu, AttentionKernel kernel) {
  ComputeCalibration c;
  c.gemm_efficiency = gpu.gemm_efficiency;
  c.gemm_dim_half = gpu.gemm_dim_half;
  c.gemm_overhead_s = gpu.gemm_overhead_s;
  c.attention_efficiency = gpu.attention_efficiency;
  c.attention_backward_efficiency = gpu.attention_backward_efficiency;
  c.attention_seq_half = gpu.attention_seq_half;
  c.gemm_fp8_efficiency = gpu.gemm_fp8_efficiency;
  c.hbm_efficiency = gpu.hbm_efficiency;
  c.gemm_scale = gpu.sustained_gemm_scale;
  c.power_rate = power_limited_compute_rate(gpu);
  if (gpu.sustained_attention_scale > 0) c.attention_scale = gpu.sustained_attention_scale;
  c.source = "catalog default for " + gpu.name + " (models/catalog/instances.yaml)";
  if (c.power_rate < 1.0)
    c.source += fmt::format("; GEMMs and attention at {:.1f} % of their rate: {:.0f} W limit of {:.0f} W TDP ({})", 100 * c.power_rate,
                            effective_power_limit_w(gpu), gpu.tdp_w, gpu.power_curve_source);
  c.attention_kernel = kernel;
  if (kernel == AttentionKernel::Triton) {
    // No sweep of the kernel is published per GPU: FlashAttention-2's terms over the paper's ratios
    // (forward 1.4x, the middle of its 1.3-1.5x; backward 2x).
    const double fa2_backward = c.attention_backward_efficiency > 0 ? c.attention_backward_efficiency : c.attention_efficiency;
    c.attention_efficiency /= kTritonFlashForwardRatio, c.attention_backward_efficiency = fa2_backward / kTritonFlashBackwardRatio;
    c.source += "; attention: FlashAttention in Triton at FlashAttention-2 / 1.4 forward, / 2 backward (Dao 2023, arXiv 2307.08691 sec. 4.1)";
  } else if (kernel != AttentionKernel::FA2) {
    const auto k = gpu.attention_kernels.find(kernel);
    if (k != gpu.attention_kernels.end()) {
      c.attention_efficiency = k->second.forward, c.attention_backward_efficiency = k->second.backward;
      const AttentionSeqHalf& h = k->second.seq_half;
      if (h.causal > 0 || h.full > 0) c.attention_seq_half = h;
      c.source += std::string("; attention: ") + to_string(kernel) + " kernel terms";
    } else {
      c.source += std::string("; attention: no ") + to_string(kernel) + " measurement for " + gpu.name + ", taken at its FlashAttention-2 terms";
    }
  }
  return c;
}

ComputeModel::ComputeModel(const GpuSpec& gpu, Precision precision, ComputeCalibration cal)
    : peak_(gpu.peak(precision)), peak_fp8_(gpu.peak_fp8_flops), hbm_(gpu.hbm_bytes_per_s), precision_(precision), cal_(std::move(cal)) {}

double ComputeModel::gemm_time(const Gemm& g, bool fp8) const {
  double dmin = double(std::min({g.m, g.n, g.k}));
  const bool in_fp8 = fp8 && peak_fp8_ > 0;
  const double large = in_fp8 && cal_.gemm_fp8_efficiency > 0 ? cal_.gemm_fp8_efficiency : cal_.gemm_efficiency;
  double eff = std::min(1.0, large * cal_.gemm_scale) * dmin / (dmin + cal_.gemm_dim_half);
  double compute = g.flops() / ((in_fp8 ? peak_fp8_ : peak_) * eff * cal_.power_rate);
  double e = in_fp8 ? 1.0 : bytes_per_element(precision_);
  double bytes = e * double(g.batch) * (double(g.m) * g.k + double(g.k) * g.n + double(g.m) * g.n);
  double memory = bytes / (hbm_ * cal_.hbm_efficiency);
  return std::max(compute, memory) + cal_.gemm_overhead_s;
}

double ComputeModel::pass_time(const PassWork& w, bool is_backward, bool flash_attention) const {
  double t = 0;
  for (const auto& g : w.gemms) t += gemm_time(g, w.fp8_gemms);
  for (const auto& g : w.score_gemms) t += gemm_time(g);  // 16-bit even in FP8 recipes
  double attn = w.attention_flops;
  if (is_backward && flash_attention) attn *= 1.0 + cal_.flash_backward_extra;
  // Fused attention kernels skip the masked half of a causal score matrix (FlashAttention counts causal
  // FLOPs as half, and its published efficiencies are on that count); materialised scores do not.
  if (w.causal && flash_attention) attn *= 0.5;
  const double long_eff = is_backward && cal_.attention_backward_efficiency > 0 ? cal_.attention_backward_efficiency : cal_.attention_efficiency;
  const double attn_eff = long_eff * cal_.attention_seq_half.factor(double(w.attention_seq), w.causal);
  const double kernel_scale = cal_.attention_kernel == AttentionKernel::Triton ? cal_.triton_attention_scale : 1.0;
  t += cal_.attention_scale * kernel_scale * attn / (peak_ * attn_eff * cal_.power_rate);
  t += (w.elementwise_bytes + cal_.eager_scale * w.eager_bytes) / (hbm_ * cal_.hbm_efficiency);
  t += w.kernels * cal_.kernel_overhead_s;
  // The GPU can run no faster than the host launches its kernels (GEMMs and attention included).
  const int launches = w.kernels + int(w.gemms.size() + w.score_gemms.size()) + (w.attention_flops > 0 ? 1 : 0);
  return std::max(t, launches * cal_.host_launch_s);
}

const char* to_string(OptimizerImplementation i) { return i == OptimizerImplementation::Foreach ? "foreach" : "fused"; }

double ComputeModel::optimizer_time(int64_t local_params, Optimizer opt, OptimizerImplementation impl) const {
  // Bytes touched per parameter (read + write). Mixed precision Adam: fp32 master r/w (8), m and v
  // r/w (16), fp32 gradient read (4), 16-bit parameter write (2), gradient norm/unscale pass (2).
  bool mixed = precision_ != Precision::FP32;
  double per_param = 0;
  switch (opt) {
    case Optimizer::Adam: per_param = mixed ? 32 : 28; break;
    case Optimizer::Lamb: per_param = mixed ? 40 : 36; break;  // + trust-ratio norms over weights and updates
    case Optimizer::Sgd: per_param = mixed ? 22 : 16; break;   // momentum only
  }
  if (impl == OptimizerImplementation::Foreach && opt == Optimizer::Adam) {
    // PyTorch's multi-tensor AdamW (torch/optim/adam.py _multi_tensor_adam) makes one pass per step over
    // fp32 tensors instead of the fused kernel's one read and write of each: weight decay _foreach_mul_
    // on the master (8), _foreach_lerp_ of m with the gradient (12), _foreach_mul_ (8) and
    // _foreach_addcmul_ (12) of v, _foreach_sqrt into a temporary (8), _foreach_div_ (8), _foreach_add
    // of eps (8), _foreach_addcdiv_ of the master (16): 80 bytes in place of the fused 28. Measured on
    // one H200 (validation/data/harness-h200-2026-12-04): 32.0 ms per step for 1.50 B parameters, 91
    // bytes per parameter at the measured copy bandwidth.
    per_param += 80 - 28;
  }
  return double(local_params) * per_param / (hbm_ * cal_.hbm_efficiency) + 10 * cal_.kernel_overhead_s;
}

double ComputeModel::collective_traffic_time(double hbm_bytes) const {
  return cal_.collective_hbm_traffic * hbm_bytes / (hbm_ * cal_.hbm_efficiency);
}

double ComputeModel::copy_time(double bytes) const {
  return 2.0 * bytes / (hbm_ * cal_.hbm_efficiency) + cal_.kernel_overhead_s;
}

}  // namespace micsim
