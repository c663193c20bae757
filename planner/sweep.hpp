#pragma once
// micsim sweep: the Cartesian product of scenario keys (`--vary cluster.nodes=2,4,8`), evaluated in
// parallel, with scaling efficiency per series and throughput ratios between strategies.
//   weak scaling: per-GPU batch and accumulation fixed (global batch grows with the GPUs);
//   strong scaling: global batch fixed.
// Scaling efficiency is relative to the smallest GPU count of the same series (the rows that differ
// only in cluster.nodes): per-GPU throughput ratio, i.e. speedup / GPU ratio.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "planner/evaluate.hpp"

namespace micsim {

enum class ScalingMode { AsGiven, Weak, Strong };

struct SweepSpec {
  std::vector<std::pair<std::string, std::vector<std::string>>> vary;  // key -> values, in order
  ScalingMode mode = ScalingMode::AsGiven;
  EngineKind engine = EngineKind::Analytic;
  int threads = 0;
  bool progress = true;
};

struct SweepRow {
  std::vector<std::string> values;      // one per varied key
  const Evaluation* eval = nullptr;
  std::string status;                   // "ok" or the reason
  std::optional<double> scaling_efficiency;
  std::optional<double> ratio;          // throughput / the first strategy's at equal GPUs and settings
  std::string ratio_to;                 // that strategy
};

struct SweepResult {
  SweepSpec spec;
  std::vector<Evaluation> evaluations;
  std::vector<SweepRow> rows;
  double wall_s = 0;
};

// Parses "--vary key=v1,v2,...".
std::pair<std::string, std::vector<std::string>> parse_vary(const std::string& text);

SweepResult run_sweep(const std::string& scenario_path, const std::vector<std::string>& base_overrides, const SweepSpec& spec);

std::string format_sweep(const SweepResult& r);
std::string sweep_csv(const SweepResult& r);
nlohmann::json sweep_json(const SweepResult& r);

}  // namespace micsim
