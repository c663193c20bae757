#pragma once
// What each fuzz target does with one input, shared by the libFuzzer binaries (fuzz/fuzz_*.cpp) and
// the unit test that replays the committed corpus and past findings (tests/test_fuzz_replay.cpp).
//
// The contract every parser keeps: hostile input either parses or raises micsim::InputError (file,
// line, key, what was expected). Any other exception, a crash, a sanitizer report, a hang, or a
// NaN/negative figure in what was parsed or simulated is a finding. Findings are thrown as
// FuzzFinding: uncaught in a fuzz binary it aborts and libFuzzer saves the input; in the test it fails.
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/calibration/calibration.hpp"
#include "models/hardware/catalog.hpp"
#include "models/io/input_error.hpp"
#include "models/workload/model_spec.hpp"
#include "planner/handoff/handoff.hpp"
#include "sim/simulation.hpp"
#include "validation/gemm.hpp"
#include "validation/nccl_tests.hpp"
#include "validation/training_validation.hpp"

#include <map>

namespace micsim::fuzz {

struct FuzzFinding : std::logic_error {
  using std::logic_error::logic_error;
};

inline void require_finite(double v, const char* what) {
  if (!std::isfinite(v) || v < 0) throw FuzzFinding(std::string("not a finite, non-negative number: ") + what);
}

// Runs `parse`; InputError is the expected way to reject input.
template <class F>
void parse_or_input_error(F&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  }
}

// Scenario YAML end to end: parse, prepare, simulate with the analytic engine. Lines starting with
// "#set " are applied as --set overrides, so that parser is reached too.
inline void scenario(const std::string& text) {
  std::vector<std::string> sets;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("#set ", 0) == 0) sets.push_back(line.substr(5));
  parse_or_input_error([&] {
    Scenario sc = parse_scenario_text(text, "<fuzz>", sets);
    SimulationResult r = simulate_analytic(prepare_simulation(sc));
    require_finite(r.iteration_time_s, "iteration time");
    require_finite(r.samples_per_s, "samples/s");
    require_finite(r.mfu, "MFU");
    require_finite(r.memory.peak_bytes, "peak memory");
    for (const auto& c : r.collectives) require_finite(c.estimate.time_s, "collective time");
  });
}

// Hugging Face config.json: parse and count parameters (what a scenario does first with it).
inline void hf_config(const std::string& text) {
  parse_or_input_error([&] {
    ModelSpec m = parse_hf_config(text, "<fuzz>/config.json");
    if (count_params(m).total <= 0) throw FuzzFinding("a model that parsed has no parameters");
  });
}

// DeepSpeed ds_config.json read as overrides, then applied to a scenario (as `plan --deepspeed`).
inline void deepspeed(const std::string& text) {
  static const char* kBase = R"(cluster: {instance: p4d.24xlarge, nodes: 8}
model: {preset: bert-10b}
training: {seq_len: 512, micro_batch: 8, global_batch: 2048}
strategy: {kind: zero3}
)";
  parse_or_input_error([&] {
    DeepSpeedOverrides ds = parse_deepspeed_config(text, "<fuzz>/ds_config.json", 64);
    parse_scenario_text(kBase, "<base>", {}, ds.overrides);
  });
}

// nccl-tests output, as a text log and as CSV rows.
inline void nccl_tests(const std::string& text) {
  auto check = [](const std::vector<NcclTestRow>& rows) {
    for (const auto& r : rows) {
      require_finite(r.bytes, "row bytes");
      if (auto t = r.time_or_derived()) require_finite(*t, "row time");
    }
  };
  parse_or_input_error([&] { check(parse_nccl_tests_log(text, "<fuzz>.log")); });
  parse_or_input_error([&] { check(parse_nccl_tests_csv(text, "<fuzz>.csv")); });
}

// Calibration files (written by `micsim calibrate`, edited by hand): parse, apply, write back.
inline void calibration(const std::string& text) {
  parse_or_input_error([&] {
    Calibration c = parse_calibration(text, "<fuzz>/calibration.yaml");
    NetworkParams net;
    ComputeCalibration comp;
    c.apply(net);
    c.apply(comp);
    Calibration again = parse_calibration(c.to_yaml(), "<fuzz>/written.yaml");
    (void)again;
  });
}

// GEMM sweep CSV (the harness's gemm.csv, or a user's cuBLASLt sweep): parse, and fit small ones.
inline void gemm_csv(const std::string& text) {
  parse_or_input_error([&] {
    auto rows = parse_gemm_csv(text, "<fuzz>/gemm.csv");
    for (const auto& r : rows) require_finite(r.time_s, "GEMM time");
    if (!rows.empty() && rows.size() <= 64) {
      GemmFit f = fit_gemm(HardwareCatalog::builtin().instance("p4d.24xlarge").gpu, rows);
      for (const auto& v : {f.calibration.gemm_efficiency, f.calibration.gemm_dim_half, f.calibration.gemm_overhead_s})
        if (v) require_finite(*v, "fitted GEMM term");
    }
  });
}

// Training-result CSVs become generated scenarios (the CSV -> YAML path): parse, then simulate the
// first rows. No CSV text may reach the scenario as YAML (fields cannot add keys).
inline void training_csv(const std::string& text) {
  parse_or_input_error([&] {
    auto rows = parse_training_dataset(text, "<fuzz>/training.csv");
    std::vector<TrainingRow> first;
    for (const auto& r : rows)
      if (!r.scenario_yaml.empty() && first.size() < 3) first.push_back(r);
    for (const auto& c : compare_training(first)) require_finite(c.predicted, "predicted metric");
  });
}

// The command line. Each input line is one argument (at most 24, 256 bytes each). Arguments with a
// '/' are dropped, so that every path is a file of the fuzzer's own working directory (see
// cli_workspace); "simgrid" is dropped to keep runs fast. The exit status must be 0, 2, 3 or 4:
// 1 (internal error) or a crash is a finding.
inline std::vector<std::string> cli_arguments(const std::string& text) {
  std::vector<std::string> args = {"micsim"};
  std::istringstream lines(text);
  for (std::string a; std::getline(lines, a) && args.size() < 25;) {
    if (a.size() > 256 || a.find('/') != std::string::npos || a.find("simgrid") != std::string::npos) continue;
    // SimGrid refinement forks DES runs: seconds each under the fuzzer's instrumentation (a 12 s
    // timeout for `plan --refine 6`, 0.4 s in a release build), and not this target's business: at most one.
    if (args.back() == "--refine" && a != "0" && a != "1") a = "1";
    if (a.rfind("--refine=", 0) == 0 && a != "--refine=0") a = "--refine=1";
    args.push_back(a);
  }
  return args;
}

// Files the command-line fuzzer's working directory holds, so arguments can name real inputs.
inline const std::map<std::string, std::string>& cli_workspace() {
  static const std::map<std::string, std::string> files = {
      {"s.yaml",
       "cluster: {instance: p4d.24xlarge, nodes: 2}\nmodel: {preset: bert-10b}\n"
       "training: {seq_len: 512, micro_batch: 8, global_batch: 256, activation_checkpointing: true}\n"
       "strategy: {kind: mics, partition_size: 8}\nplan: {nodes: [1, 2], micro_batches: [4, 8], refine: 0}\n"},
      {"ds.json", "{\"train_micro_batch_size_per_gpu\": 4, \"zero_optimization\": {\"stage\": 3, \"mics_shard_size\": 8}}\n"},
      {"g.csv", "m,n,k,time_us\n4096,4096,4096,700\n8192,8192,8192,4500\n2048,2048,2048,120\n"},
      {"rows.csv",
       "source,cluster,gpus,nodes,collective,bytes,time_us,algbw_GBps,busbw_GBps\n"
       "me,AWS p4d.24xlarge,16,2,all_gather,1048576,100,10.5,9.8\nme,AWS p4d.24xlarge,32,4,all_reduce,67108864,2000,33.5,65\n"},
      {"cal.yaml", "instance: p4d.24xlarge\nnetwork: {inter_efficiency: 0.7}\n"},
  };
  return files;
}

inline void check_cli_status(int status, const std::vector<std::string>& args) {
  if (status == 0 || status == 2 || status == 3 || status == 4) return;
  std::string shown;
  for (const auto& a : args) shown += " '" + a + "'";
  throw FuzzFinding("exit status " + std::to_string(status) + " for:" + shown);
}

}  // namespace micsim::fuzz
