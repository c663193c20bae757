#include "validation/measured_runs.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "models/calibration/error_bands.hpp"
#include "models/io/csv.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/simulation.hpp"
#include "sim/strategy/strategy.hpp"
#include "validation/least_squares.hpp"
#include "validation/training_corpus.hpp"

namespace micsim {

namespace {

// The weak prior of the corpus fit (kScalePriorSigma, validation/training_corpus.hpp) keeps a constant
// the runs barely determine (attention, when every run has short sequences) near the catalog's value
// instead of absorbing the other's error. Each run is weighed by how far one stack's runs scatter about
// micsim's predictions: the 90 % range of a row's error less its source's mean (rel_q05 ... rel_q95 of
// the run's error band, models/catalog/error_bands.yaml) read as +-1.645 standard deviations. A run more than 2 sigma off
// loses influence (Huber).
constexpr double kHuberSigmas = 2.0;

double run_scatter(const Scenario& sc) {
  const ErrorBand& b = ErrorBands::builtin().for_prediction(sc.cluster.instance.gpu.arch, shards_parameters(sc.strategy));
  return (b.rel_q95 - b.rel_q05) / (2 * 1.6449);
}

struct PreparedRun {
  Scenario scenario;
  double measured = 0;  // tokens/s per GPU
  double sigma = 0;     // run_scatter
};

PreparedRun prepare_run(const MeasuredRun& run, const std::string& instance_name, const Calibration& base) {
  const SourceLocation at{run.file, run.line, 0};
  if (!std::filesystem::is_regular_file(run.scenario))
    throw InputError(at, "scenario", fmt::format("'{}' is not a scenario file", run.scenario));
  PreparedRun p{load_scenario(run.scenario)};
  if (p.scenario.cluster.instance.name != instance_name)
    throw InputError(at, "scenario",
                     fmt::format("{} simulates instance '{}'; the calibration is for '{}' (one instance per calibration file)", run.scenario,
                                 p.scenario.cluster.instance.name, instance_name));
  p.scenario.calibration.overlay(base);
  p.sigma = run_scatter(p.scenario);
  const double tokens_per_step = double(p.scenario.training.global_batch) * double(p.scenario.training.seq_len);
  const double world = p.scenario.world_size();
  if (run.metric == "tokens_per_s_per_gpu") p.measured = run.value;
  else if (run.metric == "tokens_per_s") p.measured = run.value / world;
  else p.measured = tokens_per_step / run.value / world;  // step_time_s
  return p;
}

std::string metric_names() {
  std::string s;
  for (const char* m : kMeasuredRunMetrics) s += (s.empty() ? "" : " | ") + std::string(m);
  return s;
}

double predicted_tokens_per_gpu(Scenario sc, double gemm_scale, double attention_scale) {
  sc.calibration.gemm_scale = gemm_scale;
  sc.calibration.attention_scale = attention_scale;
  const SimulationResult r = simulate_analytic(prepare_simulation(sc));
  return r.tokens_per_s / r.world_size;
}

struct Constants {
  double gemm_scale, attention_scale;
  int iterations = 0;
};

// Fits both scales on the runs listed in `use` (indices into `runs`), from `start`.
Constants fit_on(const std::vector<PreparedRun>& runs, const std::vector<size_t>& use, const Constants& start) {
  std::vector<FitParameter> params = {{"gemm_scale", start.gemm_scale, 0.1, 2.0}, {"attention_scale", start.attention_scale, 0.1, 10.0}};
  FitOutcome o = fit_least_squares(params, [&](const std::vector<double>& v) {
    std::vector<double> res;
    for (size_t i : use) res.push_back(std::log(predicted_tokens_per_gpu(runs[i].scenario, v[0], v[1]) / runs[i].measured) / runs[i].sigma);
    res.push_back(std::log(v[0] / start.gemm_scale) / kScalePriorSigma);
    res.push_back(std::log(v[1] / start.attention_scale) / kScalePriorSigma);
    return res;
  }, kHuberSigmas, 50);
  return {o.values[0], o.values[1], o.iterations};
}

}  // namespace

std::vector<MeasuredRun> load_measured_runs(const std::string& csv_path) {
  const CsvTable t = load_csv(csv_path);
  const int scenario_col = t.column("scenario");
  if (scenario_col < 0) throw InputError({csv_path, 1, 0}, "scenario", "a column 'scenario' (the scenario file of each run)");
  std::vector<std::pair<std::string, int>> metric_cols;
  for (const char* m : kMeasuredRunMetrics)
    if (t.column(m) >= 0) metric_cols.emplace_back(m, t.column(m));
  if (metric_cols.empty())
    throw InputError({csv_path, 1, 0}, "", "a measurement column: " + metric_names());
  const std::filesystem::path folder = std::filesystem::path(csv_path).parent_path();
  std::vector<MeasuredRun> out;
  for (const auto& r : t.rows) {
    MeasuredRun run;
    run.file = csv_path, run.line = r.line;
    const std::string& s = r.fields[size_t(scenario_col)];
    if (s.empty()) throw InputError({csv_path, r.line, 0}, "scenario", "a scenario file");
    run.scenario = std::filesystem::path(s).is_absolute() ? s : (folder / s).lexically_normal().string();
    for (const auto& [name, col] : metric_cols) {
      const std::string& v = r.fields[size_t(col)];
      if (v.empty()) continue;
      if (!run.metric.empty())
        throw InputError({csv_path, r.line, 0}, name, fmt::format("one measurement per run (this row also gives {})", run.metric));
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !std::isfinite(x) || x <= 0)
        throw InputError({csv_path, r.line, 0}, name, fmt::format("a positive number, got '{}'", v));
      run.metric = name, run.value = x;
    }
    if (run.metric.empty())
      throw InputError({csv_path, r.line, 0}, "", "a measurement (" + metric_names() + ") in this row");
    out.push_back(run);
  }
  if (out.empty()) throw InputError({csv_path, 0, 0}, "", "at least one measured run");
  return out;
}

RunFit fit_measured_runs(const std::string& instance_name, const std::vector<MeasuredRun>& runs, const Calibration& base) {
  std::vector<PreparedRun> prepared;
  for (const auto& r : runs) prepared.push_back(prepare_run(r, instance_name, base));
  // Start from what the scenarios would run with now: the catalog's sustained scales of the GPU, or
  // the base calibration's.
  const ComputeCalibration now = prepare_simulation(prepared.front().scenario).compute_calibration;
  const Constants start{now.gemm_scale, now.attention_scale};
  std::vector<size_t> all(prepared.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const Constants fitted = fit_on(prepared, all, start);

  RunFit out;
  out.gemm_scale_start = start.gemm_scale, out.attention_scale_start = start.attention_scale;
  out.gemm_scale = fitted.gemm_scale, out.attention_scale = fitted.attention_scale;
  out.iterations = fitted.iterations;
  for (const auto& p : prepared) out.run_sigma += p.sigma / double(prepared.size());
  out.held_out = prepared.size() >= 3;
  for (size_t i = 0; i < prepared.size(); ++i) {
    const PreparedRun& p = prepared[i];
    RunFitRow row;
    row.run = &runs[i];
    row.name = p.scenario.name;
    row.measured = p.measured;
    row.before = predicted_tokens_per_gpu(p.scenario, start.gemm_scale, start.attention_scale) / p.measured - 1;
    row.after = predicted_tokens_per_gpu(p.scenario, fitted.gemm_scale, fitted.attention_scale) / p.measured - 1;
    if (out.held_out) {
      // Leave this run out: the error a new run of the same cluster would see.
      std::vector<size_t> others;
      for (size_t j : all)
        if (j != i) others.push_back(j);
      const Constants k = fit_on(prepared, others, start);
      row.held_out = predicted_tokens_per_gpu(p.scenario, k.gemm_scale, k.attention_scale) / p.measured - 1;
    }
    out.rows.push_back(row);
  }
  return out;
}

}  // namespace micsim
