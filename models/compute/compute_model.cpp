#include "models/compute/compute_model.hpp"

#include <algorithm>

namespace micsim {

const char* to_string(Optimizer o) {
  switch (o) {
    case Optimizer::Adam: return "adam";
    case Optimizer::Lamb: return "lamb";
    case Optimizer::Sgd: return "sgd";
  }
  return "?";
}

ComputeCalibration ComputeCalibration::defaults_for(const GpuSpec& gpu) {
  ComputeCalibration c;
  c.gemm_efficiency = gpu.gemm_efficiency;
  c.gemm_dim_half = gpu.gemm_dim_half;
  c.gemm_overhead_s = gpu.gemm_overhead_s;
  c.attention_efficiency = gpu.attention_efficiency;
  c.source = "catalog default for " + gpu.name + " (models/catalog/instances.yaml)";
  return c;
}

ComputeModel::ComputeModel(const GpuSpec& gpu, Precision precision, ComputeCalibration cal)
    : peak_(gpu.peak(precision)), hbm_(gpu.hbm_bytes_per_s), precision_(precision), cal_(std::move(cal)) {}

double ComputeModel::gemm_time(const Gemm& g) const {
  double dmin = double(std::min({g.m, g.n, g.k}));
  double eff = cal_.gemm_efficiency * dmin / (dmin + cal_.gemm_dim_half);
  double compute = g.flops() / (peak_ * eff);
  double e = bytes_per_element(precision_);
  double bytes = e * double(g.batch) * (double(g.m) * g.k + double(g.k) * g.n + double(g.m) * g.n);
  double memory = bytes / (hbm_ * cal_.hbm_efficiency);
  return std::max(compute, memory) + cal_.gemm_overhead_s;
}

double ComputeModel::pass_time(const PassWork& w, bool is_backward, bool flash_attention) const {
  double t = 0;
  for (const auto& g : w.gemms) t += gemm_time(g);
  double attn = w.attention_flops;
  if (is_backward && flash_attention) attn *= 1.0 + cal_.flash_backward_extra;
  t += attn / (peak_ * cal_.attention_efficiency);
  t += w.elementwise_bytes / (hbm_ * cal_.hbm_efficiency);
  t += w.kernels * cal_.kernel_overhead_s;
  return t;
}

double ComputeModel::optimizer_time(int64_t local_params, Optimizer opt) const {
  // Bytes touched per parameter (read + write). Mixed precision Adam: fp32 master r/w (8), m and v
  // r/w (16), fp32 gradient read (4), 16-bit parameter write (2), gradient norm/unscale pass (2).
  bool mixed = precision_ != Precision::FP32;
  double per_param = 0;
  switch (opt) {
    case Optimizer::Adam: per_param = mixed ? 32 : 28; break;
    case Optimizer::Lamb: per_param = mixed ? 40 : 36; break;  // + trust-ratio norms over weights and updates
    case Optimizer::Sgd: per_param = mixed ? 22 : 16; break;   // momentum only
  }
  return double(local_params) * per_param / (hbm_ * cal_.hbm_efficiency) + 10 * cal_.kernel_overhead_s;
}

double ComputeModel::copy_time(double bytes) const {
  return 2.0 * bytes / (hbm_ * cal_.hbm_efficiency) + cal_.kernel_overhead_s;
}

}  // namespace micsim
