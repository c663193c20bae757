#include "models/calibration/calibration.hpp"

#include <fmt/format.h>

#include "models/hardware/catalog.hpp"
#include "models/io/input_file.hpp"
#include "models/io/yaml_node.hpp"

namespace micsim {

namespace {
// Every term of a calibration file, for the operations that treat them alike.
using Term = std::optional<double> Calibration::*;
constexpr Term kTerms[] = {
    &Calibration::intra_efficiency, &Calibration::intra_latency_scale, &Calibration::inter_efficiency, &Calibration::inter_efficiency_at_scale,
    &Calibration::inter_latency_s, &Calibration::inter_fixed_latency_s, &Calibration::inter_ll128_efficiency, &Calibration::inter_tree_efficiency, &Calibration::collnet_efficiency,
    &Calibration::nvls_efficiency, &Calibration::intra_ramp_min, &Calibration::intra_ramp_half_bytes, &Calibration::inter_ramp_min, &Calibration::inter_ramp_half_bytes, &Calibration::gpu_path_bytes_per_s,
    &Calibration::call_overhead_s, &Calibration::nccl_net_latency_s, &Calibration::gemm_efficiency, &Calibration::gemm_dim_half, &Calibration::gemm_overhead_s,
    &Calibration::attention_efficiency, &Calibration::hbm_efficiency, &Calibration::kernel_overhead_s, &Calibration::interference,
    &Calibration::collective_hbm_traffic, &Calibration::memory_pressure_onset, &Calibration::memory_pressure_slowdown,
    &Calibration::attention_backward_efficiency, &Calibration::gemm_fp8_efficiency, &Calibration::eager_scale, &Calibration::jitter_cv, &Calibration::jitter_window_exponent, &Calibration::straggler_rate_per_s, &Calibration::straggler_stall_s,
    &Calibration::attention_scale, &Calibration::host_launch_s, &Calibration::gemm_scale, &Calibration::triton_attention_scale,
    &Calibration::attention_seq_half_causal, &Calibration::attention_seq_half_full};
}  // namespace

bool Calibration::empty() const {
  for (Term t : kTerms)
    if (this->*t) return false;
  return !measured_nodes;
}

std::string Calibration::network_extrapolation_note(const FabricSpec& fabric, int nodes) const {
  if (!sets_inter_efficiency()) return fabric.extrapolation_note(nodes);
  // A hand-written calibration states no range: its author vouches for it.
  if (nodes <= 1 || !measured_nodes || nodes <= measured_nodes->hi) return "";
  return fmt::format("network: calibration {} was fitted on nccl-tests rows on {} (its measured_nodes); at {} nodes its "
                     "efficiency at scale is extrapolated; logs from a run at this scale would bound it", path,
                     measured_nodes->str(), nodes);
}

void Calibration::overlay(const Calibration& over) {
  for (Term t : kTerms)
    if (over.*t) this->*t = over.*t;
  if (over.measured_nodes) measured_nodes = over.measured_nodes;
  if (!over.instance.empty()) instance = over.instance;
  if (!over.source.empty()) source = over.source;
}

void Calibration::apply(NetworkParams& net) const {
  if (intra_efficiency) net.intra_efficiency = *intra_efficiency;
  if (intra_latency_scale) net.intra_latency_scale = *intra_latency_scale;
  if (inter_efficiency) net.inter_efficiency = *inter_efficiency;
  if (inter_efficiency_at_scale) net.inter_efficiency_at_scale = *inter_efficiency_at_scale;
  if (inter_latency_s) net.inter_latency_s = *inter_latency_s;
  if (inter_fixed_latency_s) net.inter_fixed_latency_s = *inter_fixed_latency_s;
  if (inter_ll128_efficiency) net.inter_ll128_efficiency = *inter_ll128_efficiency;
  if (inter_tree_efficiency) net.inter_tree_efficiency = *inter_tree_efficiency;
  if (collnet_efficiency) net.collnet_efficiency = *collnet_efficiency;
  if (nvls_efficiency) net.nvls_efficiency = *nvls_efficiency;
  if (intra_ramp_min) net.intra_ramp_min = *intra_ramp_min;
  if (intra_ramp_half_bytes) net.intra_ramp_half_bytes = *intra_ramp_half_bytes;
  if (inter_ramp_min) net.inter_ramp_min = *inter_ramp_min;
  if (inter_ramp_half_bytes) net.inter_ramp_half_bytes = *inter_ramp_half_bytes;
  if (call_overhead_s) net.call_overhead_s = *call_overhead_s;
  if (gpu_path_bytes_per_s) net.gpu_path_bytes_per_s = *gpu_path_bytes_per_s;
  if (nccl_net_latency_s) net.nccl_net_latency_s = *nccl_net_latency_s;
  if (intra_efficiency || intra_latency_scale || inter_efficiency || inter_efficiency_at_scale || inter_latency_s || inter_fixed_latency_s ||
      inter_ll128_efficiency || inter_tree_efficiency || collnet_efficiency || nvls_efficiency || intra_ramp_min || intra_ramp_half_bytes || inter_ramp_min || inter_ramp_half_bytes || call_overhead_s || nccl_net_latency_s ||
      gpu_path_bytes_per_s)
    net.source = "calibration " + path;
}

void Calibration::apply(ComputeCalibration& c) const {
  if (gemm_efficiency) c.gemm_efficiency = *gemm_efficiency;
  if (gemm_dim_half) c.gemm_dim_half = *gemm_dim_half;
  if (gemm_overhead_s) c.gemm_overhead_s = *gemm_overhead_s;
  if (attention_efficiency) c.attention_efficiency = *attention_efficiency;
  if (hbm_efficiency) c.hbm_efficiency = *hbm_efficiency;
  if (kernel_overhead_s) c.kernel_overhead_s = *kernel_overhead_s;
  if (interference) c.interference = *interference;
  if (collective_hbm_traffic) c.collective_hbm_traffic = *collective_hbm_traffic;
  if (memory_pressure_onset) c.memory_pressure_onset = *memory_pressure_onset;
  if (memory_pressure_slowdown) c.memory_pressure_slowdown = *memory_pressure_slowdown;
  if (attention_backward_efficiency) c.attention_backward_efficiency = *attention_backward_efficiency;
  if (gemm_fp8_efficiency) c.gemm_fp8_efficiency = *gemm_fp8_efficiency;
  if (eager_scale) c.eager_scale = *eager_scale;
  if (jitter_cv) c.jitter_cv = *jitter_cv;
  if (jitter_window_exponent) c.jitter_window_exponent = *jitter_window_exponent;
  if (straggler_rate_per_s) c.straggler_rate_per_s = *straggler_rate_per_s;
  if (straggler_stall_s) c.straggler_stall_s = *straggler_stall_s;
  if (attention_scale) c.attention_scale = *attention_scale;
  if (triton_attention_scale) c.triton_attention_scale = *triton_attention_scale;
  if (host_launch_s) c.host_launch_s = *host_launch_s;
  if (gemm_scale) c.gemm_scale = *gemm_scale;
  // Kernel rates measured on the user's GPUs were measured at whatever power limit those run at: the
  // catalog's power curve must not lower them a second time.
  if (gemm_efficiency || gemm_fp8_efficiency || has_attention_terms()) c.power_rate = 1.0;
  // Attention terms measured on the user's kernel replace the catalog's whole: its length terms too
  // (none given = a rate that does not depend on length).
  if (has_attention_terms())
    c.attention_seq_half = {attention_seq_half_causal.value_or(0), attention_seq_half_full.value_or(0)};
  if (attention_seq_half_causal || attention_seq_half_full || eager_scale || jitter_cv || jitter_window_exponent || straggler_rate_per_s || straggler_stall_s || attention_scale || host_launch_s || gemm_scale || triton_attention_scale ||
      gemm_efficiency || gemm_dim_half || gemm_overhead_s || attention_efficiency || hbm_efficiency || kernel_overhead_s ||
      interference || collective_hbm_traffic || memory_pressure_onset || memory_pressure_slowdown || attention_backward_efficiency ||
      gemm_fp8_efficiency)
    c.source = "calibration " + path;
}

Calibration load_calibration(const std::string& path) { return parse_calibration(read_whole_file(path), path); }

void Calibration::check_applies_to(const std::string& instance_name, const SourceLocation& where) const {
  if (instance.empty())
    throw InputError(where, "calibration", fmt::format("{} names no instance (add `instance: NAME`, the instance it was measured on)", path));
  if (instance != instance_name)
    throw InputError(where, "calibration", fmt::format("{} was measured on {}; this run is on {} (a calibration holds for the hardware it "
                                                       "was fitted on)", path, instance, instance_name));
}

Calibration parse_calibration(const std::string& text, const std::string& path) {
  YamlNode root = YamlNode::load_string(text, path);
  root.check_keys({"instance", "source", "network", "compute", "residuals"});
  Calibration c;
  c.path = path;
  if (auto v = root.get("instance")) c.instance = v->as_string();
  if (auto v = root.get("source")) c.source = v->as_string();
  if (auto net = root.get("network")) {
    net->check_keys({"intra_efficiency", "intra_latency_scale", "inter_efficiency", "inter_efficiency_at_scale", "inter_latency_us",
                     "inter_fixed_latency_us", "nvls_efficiency", "intra_ramp_min", "intra_ramp_half_kib", "inter_ramp_min", "inter_ramp_half_kib",
                     "inter_ll128_efficiency", "inter_tree_efficiency", "collnet_efficiency", "call_overhead_us", "nccl_net_latency_us",
                     "gpu_path_gbytes_per_s", "measured_nodes"});
    if (auto v = net->get("intra_efficiency")) c.intra_efficiency = v->as_double_in(0.01, 1.5);
    if (auto v = net->get("intra_latency_scale")) c.intra_latency_scale = v->as_double_in(0.0, 100.0);
    if (auto v = net->get("inter_efficiency")) c.inter_efficiency = v->as_double_in(0.01, 1.5);
    if (auto v = net->get("inter_efficiency_at_scale")) c.inter_efficiency_at_scale = v->as_double_in(0.01, 1.5);
    if (auto v = net->get("inter_latency_us")) c.inter_latency_s = v->as_double_in(kMinInterLatencyS * 1e6, 1e5) * 1e-6;
    if (auto v = net->get("inter_fixed_latency_us")) c.inter_fixed_latency_s = v->as_double_in(0.0, 1e5) * 1e-6;
    if (auto v = net->get("nvls_efficiency")) c.nvls_efficiency = v->as_double_in(0.01, 2.0);
    if (auto v = net->get("intra_ramp_min")) c.intra_ramp_min = v->as_double_in(0.01, 1.0);
    if (auto v = net->get("intra_ramp_half_kib")) c.intra_ramp_half_bytes = v->as_double_in(0, 1e9) * 1024.0;
    if (auto v = net->get("inter_ramp_min")) c.inter_ramp_min = v->as_double_in(0.01, 1.0);
    if (auto v = net->get("inter_ramp_half_kib")) c.inter_ramp_half_bytes = v->as_double_in(0, 1e9) * 1024.0;
    if (auto v = net->get("inter_ll128_efficiency")) c.inter_ll128_efficiency = v->as_double_in(0.05, 1.5);
    if (auto v = net->get("inter_tree_efficiency")) c.inter_tree_efficiency = v->as_double_in(0.05, 1.5);
    if (auto v = net->get("collnet_efficiency")) c.collnet_efficiency = v->as_double_in(0.01, 1.0);
    if (auto v = net->get("gpu_path_gbytes_per_s")) c.gpu_path_bytes_per_s = v->as_double_in(0, 1e4) * 1e9;  // 0: no limit
    if (auto v = net->get("measured_nodes")) c.measured_nodes = parse_node_range(*v);
    if (auto v = net->get("nccl_net_latency_us")) c.nccl_net_latency_s = v->as_double_in(0, 1e5) * 1e-6;
    if (auto v = net->get("call_overhead_us")) c.call_overhead_s = v->as_double_in(0, 1e5) * 1e-6;
  }
  if (auto cmp = root.get("compute")) {
    cmp->check_keys({"gemm_efficiency", "gemm_dim_half", "gemm_overhead_us", "attention_efficiency",
                     "hbm_efficiency", "kernel_overhead_us", "interference", "collective_hbm_traffic", "memory_pressure_onset",
                     "memory_pressure_slowdown", "attention_backward_efficiency", "gemm_fp8_efficiency", "eager_scale",
                     "jitter_cv", "jitter_window_exponent", "straggler_stalls_per_gpu_hour", "straggler_stall_ms", "attention_scale", "host_launch_us", "gemm_scale", "triton_attention_scale",
                     "attention_seq_half_causal", "attention_seq_half_full"});
    if (auto v = cmp->get("attention_seq_half_causal")) c.attention_seq_half_causal = v->as_double_in(0.0, 1e6);
    if (auto v = cmp->get("attention_seq_half_full")) c.attention_seq_half_full = v->as_double_in(0.0, 1e6);
    if (auto v = cmp->get("gemm_scale")) c.gemm_scale = v->as_double_in(0.1, 2.0);
    if (auto v = cmp->get("attention_scale")) c.attention_scale = v->as_double_in(0.1, 10.0);
    if (auto v = cmp->get("triton_attention_scale")) c.triton_attention_scale = v->as_double_in(0.1, 10.0);
    if (auto v = cmp->get("host_launch_us")) c.host_launch_s = v->as_double_in(0.0, 1e4) * 1e-6;
    if (auto v = cmp->get("eager_scale")) c.eager_scale = v->as_double_in(0.0, 20.0);
    if (auto v = cmp->get("jitter_cv")) c.jitter_cv = v->as_double_in(0.0, 1.0);
    if (auto v = cmp->get("jitter_window_exponent")) c.jitter_window_exponent = v->as_double_in(0.0, 1.0);
    if (auto v = cmp->get("straggler_stalls_per_gpu_hour")) c.straggler_rate_per_s = v->as_double_in(0.0, 3600.0) / 3600.0;
    if (auto v = cmp->get("straggler_stall_ms")) c.straggler_stall_s = v->as_double_in(0.0, 6e4) * 1e-3;
    if (auto v = cmp->get("attention_backward_efficiency")) c.attention_backward_efficiency = v->as_double_in(0.01, 1.0);
    if (auto v = cmp->get("gemm_fp8_efficiency")) c.gemm_fp8_efficiency = v->as_double_in(0.01, 1.0);
    if (auto v = cmp->get("gemm_efficiency")) c.gemm_efficiency = v->as_double_in(0.01, 1.0);
    if (auto v = cmp->get("gemm_dim_half")) c.gemm_dim_half = v->as_double_in(0.0, 1e5);
    if (auto v = cmp->get("gemm_overhead_us")) c.gemm_overhead_s = v->as_double_in(0.0, 1e5) * 1e-6;
    if (auto v = cmp->get("attention_efficiency")) c.attention_efficiency = v->as_double_in(0.01, 1.0);
    if (auto v = cmp->get("hbm_efficiency")) c.hbm_efficiency = v->as_double_in(0.01, 1.0);
    if (auto v = cmp->get("kernel_overhead_us")) c.kernel_overhead_s = v->as_double_in(0.0, 1e5) * 1e-6;
    if (auto v = cmp->get("interference")) c.interference = v->as_double_in(0.0, 0.95);
    if (auto v = cmp->get("collective_hbm_traffic")) c.collective_hbm_traffic = v->as_double_in(0.0, 1.0);
    if (auto v = cmp->get("memory_pressure_onset")) c.memory_pressure_onset = v->as_double_in(0.0, 10.0);
    if (auto v = cmp->get("memory_pressure_slowdown")) c.memory_pressure_slowdown = v->as_double_in(0.0, 10.0);
  }
  return c;
}

std::string Calibration::to_yaml() const {
  std::string out = "# micsim calibration file (load it from a scenario with `calibration: <path>`)\n";
  // Names and paths are quoted by the YAML emitter: a path with '"' or '\\' reads back as written.
  auto quoted = [](const std::string& s) {
    YAML::Emitter e;
    e << YAML::DoubleQuoted << s;
    return std::string(e.c_str());
  };
  if (!instance.empty()) out += fmt::format("instance: {}\n", quoted(instance));
  if (!source.empty()) out += fmt::format("source: {}\n", quoted(source));
  std::string net, cmp;
  auto put = [](std::string& s, const char* key, const std::optional<double>& v, double scale = 1.0) {
    if (v) s += fmt::format("  {}: {:.6g}\n", key, *v * scale);
  };
  put(net, "intra_efficiency", intra_efficiency);
  put(net, "intra_latency_scale", intra_latency_scale);
  put(net, "inter_efficiency", inter_efficiency);
  put(net, "inter_efficiency_at_scale", inter_efficiency_at_scale);
  put(net, "inter_latency_us", inter_latency_s, 1e6);
  put(net, "inter_fixed_latency_us", inter_fixed_latency_s, 1e6);
  put(net, "nvls_efficiency", nvls_efficiency);
  put(net, "intra_ramp_min", intra_ramp_min);
  put(net, "intra_ramp_half_kib", intra_ramp_half_bytes, 1.0 / 1024);
  put(net, "inter_ramp_min", inter_ramp_min);
  put(net, "inter_ramp_half_kib", inter_ramp_half_bytes, 1.0 / 1024);
  put(net, "inter_ll128_efficiency", inter_ll128_efficiency);
  put(net, "inter_tree_efficiency", inter_tree_efficiency);
  put(net, "collnet_efficiency", collnet_efficiency);
  put(net, "gpu_path_gbytes_per_s", gpu_path_bytes_per_s, 1e-9);
  put(net, "call_overhead_us", call_overhead_s, 1e6);
  put(net, "nccl_net_latency_us", nccl_net_latency_s, 1e6);
  if (measured_nodes) net += fmt::format("  measured_nodes: [{}, {}]\n", measured_nodes->lo, measured_nodes->hi);
  put(cmp, "gemm_efficiency", gemm_efficiency);
  put(cmp, "gemm_dim_half", gemm_dim_half);
  put(cmp, "gemm_overhead_us", gemm_overhead_s, 1e6);
  put(cmp, "attention_efficiency", attention_efficiency);
  put(cmp, "attention_backward_efficiency", attention_backward_efficiency);
  put(cmp, "attention_seq_half_causal", attention_seq_half_causal);
  put(cmp, "attention_seq_half_full", attention_seq_half_full);
  put(cmp, "gemm_fp8_efficiency", gemm_fp8_efficiency);
  put(cmp, "eager_scale", eager_scale);
  put(cmp, "jitter_cv", jitter_cv);
  put(cmp, "jitter_window_exponent", jitter_window_exponent);
  put(cmp, "straggler_stalls_per_gpu_hour", straggler_rate_per_s, 3600.0);
  put(cmp, "straggler_stall_ms", straggler_stall_s, 1e3);
  put(cmp, "attention_scale", attention_scale);
  put(cmp, "triton_attention_scale", triton_attention_scale);
  put(cmp, "host_launch_us", host_launch_s, 1e6);
  put(cmp, "gemm_scale", gemm_scale);
  put(cmp, "hbm_efficiency", hbm_efficiency);
  put(cmp, "kernel_overhead_us", kernel_overhead_s, 1e6);
  put(cmp, "interference", interference);
  put(cmp, "collective_hbm_traffic", collective_hbm_traffic);
  put(cmp, "memory_pressure_onset", memory_pressure_onset);
  put(cmp, "memory_pressure_slowdown", memory_pressure_slowdown);
  if (!net.empty()) out += "network:\n" + net;
  if (!cmp.empty()) out += "compute:\n" + cmp;
  return out;
}

}  // namespace micsim
