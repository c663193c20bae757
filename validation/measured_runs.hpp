#pragma once
// Training steps measured on the user's own cluster, and the fit of micsim's two in-step compute
// constants to them (`micsim calibrate --runs FILE`): how fast a step runs its GEMMs and its attention
// against the kernel benchmarks the catalog's terms come from (compute.gemm_scale,
// compute.attention_scale; docs/model.md sec 2.1-2.2). The network terms are fitted from nccl-tests
// (`--nccl-tests`, or a `--base` file) before the runs are, so what the runs set is the compute.
//
// The runs file is CSV, one measured run per row:
//   scenario,tokens_per_s_per_gpu        scenario: a scenario file, relative to the CSV's folder
//   runs/llama3-8b-1node.yaml,6150       the measurement: one of tokens_per_s_per_gpu, tokens_per_s
//                                        (the whole job) or step_time_s (seconds per optimizer step)
#include <string>
#include <vector>

#include "models/calibration/calibration.hpp"

namespace micsim {

// The measurement columns a runs file may give (one per row).
inline constexpr const char* kMeasuredRunMetrics[] = {"tokens_per_s_per_gpu", "tokens_per_s", "step_time_s"};

struct MeasuredRun {
  std::string file;      // the runs CSV and the row's line, for messages
  int line = 0;
  std::string scenario;  // the scenario file, resolved against the CSV's folder
  std::string metric;    // tokens_per_s_per_gpu | tokens_per_s | step_time_s
  double value = 0;
};

// Throws InputError (file:line, column) on a missing column, a row with no or two measurements, a
// measurement that is not a positive number.
std::vector<MeasuredRun> load_measured_runs(const std::string& csv_path);

struct RunFitRow {
  const MeasuredRun* run = nullptr;
  std::string name;              // the scenario's name
  double measured = 0;           // tokens/s per GPU (converted from the row's metric)
  double before = 0, after = 0;  // predicted / measured - 1 with the starting and the fitted constants
  double held_out = 0;           // the same with constants fitted on the other runs (needs >= 3 runs)
};

struct RunFit {
  std::vector<RunFitRow> rows;
  double gemm_scale_start = 1, attention_scale_start = 1;
  double gemm_scale = 1, attention_scale = 1;
  double run_sigma = 0;   // the scatter the runs are weighed with (mean over the runs)
  bool held_out = false;  // rows' held_out filled (3 runs or more)
  int iterations = 0;
};

// Every run must simulate `instance_name` (the calibration file is made for one instance); `base` is
// laid over each scenario's own calibration before anything is fitted.
RunFit fit_measured_runs(const std::string& instance_name, const std::vector<MeasuredRun>& runs, const Calibration& base);

}  // namespace micsim
