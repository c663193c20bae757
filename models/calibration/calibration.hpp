#pragma once
// A calibration file: measured corrections to the catalog's network and compute defaults. Written by
// `micsim calibrate`, loaded by scenarios (`calibration: path`). Only the keys present override.
//
//   instance: p4d.24xlarge            # what it was fitted on (informational)
//   source: "nccl-tests logs ..."     # how it was made
//   network: {intra_efficiency, intra_latency_scale, inter_efficiency, inter_efficiency_at_scale,
//             inter_latency_us, inter_fixed_latency_us, nvls_efficiency, intra_ramp_min, intra_ramp_half_kib, inter_ramp_min,
//             inter_ramp_half_kib, inter_ll128_efficiency, inter_tree_efficiency, collnet_efficiency, call_overhead_us}
//   compute: {gemm_efficiency, gemm_dim_half, gemm_overhead_us, gemm_fp8_efficiency, attention_efficiency,
//             attention_backward_efficiency, hbm_efficiency, kernel_overhead_us, interference, collective_hbm_traffic,
//             memory_pressure_onset, memory_pressure_slowdown, jitter_cv, jitter_window_exponent, straggler_stalls_per_gpu_hour, straggler_stall_ms, ...}
#include <optional>
#include <string>

#include "models/collective/collective.hpp"
#include "models/compute/compute_model.hpp"
#include "models/hardware/hardware.hpp"
#include "models/io/input_error.hpp"

namespace micsim {

struct Calibration {
  std::string path;
  std::string instance;
  std::string source;
  std::optional<double> intra_efficiency, intra_latency_scale, inter_efficiency, inter_efficiency_at_scale, inter_latency_s,
      inter_fixed_latency_s, inter_ll128_efficiency, inter_tree_efficiency, collnet_efficiency, nvls_efficiency, intra_ramp_min, intra_ramp_half_bytes, inter_ramp_min, inter_ramp_half_bytes, call_overhead_s,
      gpu_path_bytes_per_s;
  // What the net plugin reports to NCCL's cost model on this cluster (a setting, not fitted: it steers NCCL's pick only).
  std::optional<double> nccl_net_latency_s;
  std::optional<double> gemm_efficiency, gemm_dim_half, gemm_overhead_s, attention_efficiency, hbm_efficiency,
      kernel_overhead_s, interference, collective_hbm_traffic, memory_pressure_onset, memory_pressure_slowdown, attention_backward_efficiency,
      gemm_fp8_efficiency, eager_scale, jitter_cv, jitter_window_exponent, straggler_rate_per_s, straggler_stall_s, attention_scale, host_launch_s, gemm_scale, triton_attention_scale,
      attention_seq_half_causal, attention_seq_half_full;

  // Node counts of the nccl-tests rows its inter-node terms were fitted on (network `measured_nodes`;
  // micsim calibrate writes it): beyond them its efficiency at scale is an extrapolation too.
  std::optional<NodeRange> measured_nodes;

  bool empty() const;
  // Sets every term `over` sets (its instance and source too, when given); the others stay.
  void overlay(const Calibration& over);
  // Attention terms of a measured kernel (efficiencies or length terms): they replace the catalog's whole.
  bool has_attention_terms() const {
    return attention_efficiency || attention_backward_efficiency || attention_seq_half_causal || attention_seq_half_full;
  }
  void apply(NetworkParams& net) const;
  void apply(ComputeCalibration& c) const;
  std::string to_yaml() const;
  // Its own inter-node efficiencies, where it sets them (they replace the fabric's).
  bool sets_inter_efficiency() const { return inter_efficiency || inter_efficiency_at_scale; }
  // The line for a run over `nodes` nodes whose network terms are an extrapolation: the fabric's range
  // (FabricSpec::extrapolation_note) unless this calibration sets the efficiencies, then its own range.
  std::string network_extrapolation_note(const FabricSpec& fabric, int nodes) const;
  // Throws InputError (at `where`) unless this calibration was made for `instance_name`.
  void check_applies_to(const std::string& instance_name, const SourceLocation& where) const;
};

Calibration load_calibration(const std::string& path);
// The same from text already read (`shown_name` is used in messages).
Calibration parse_calibration(const std::string& text, const std::string& shown_name);

}  // namespace micsim
