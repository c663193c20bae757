// micsim validate DATASET... [--instance NAME] [--json FILE]
// Predictions against published measurements, row by row, with the error and a summary per source.
// nccl-tests CSVs/logs: busbw for sizes >= 1 MiB, time for sizes <= 64 KiB.
#include <fmt/format.h>

#include <filesystem>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <cmath>
#include <map>
#include <set>

#include "cli/commands.hpp"
#include "models/io/json_text.hpp"
#include "sim/report/report.hpp"
#include "validation/collective_validation.hpp"
#include "validation/megatron_validation.hpp"
#include "validation/training_corpus.hpp"
#include "validation/training_validation.hpp"

namespace micsim::cli {

namespace {

// The corpus: per source group, errors with the constants fitted on every group (in sample) and, with
// --leave-one-source-out, with constants fitted on the other groups only (out of sample).
int run_corpus_validation(const std::string& dir, bool held_out, const std::string& json_path, const std::string& bands_path, bool quiet,
                          int threads, bool fit_stragglers, bool fit_jitter_window) {
  OutputPlan outputs;
  outputs.output("--json", json_path);
  outputs.output("--write-bands", bands_path);
  const auto rows = load_training_corpus(dir);
  size_t compared = 0;
  std::map<std::string, size_t> skipped;
  for (const auto& r : rows) (r.skip_reason.empty() ? (void)++compared : (void)++skipped[r.skip_reason]);
  std::string text = fmt::format("training corpus {}: {} rows, {} compared on tokens/s per GPU\n", dir, rows.size(), compared);
  for (const auto& [why, n] : skipped) text += fmt::format("  skipped {:>4}: {}\n", n, why);
  CorpusConstants start;
  // --fit-stragglers: the straggler terms are fitted too, from a start near the scaling series' own
  // shape (2 stalls per GPU-hour of 125 ms); off, they stay 0 as micsim's defaults are.
  if (fit_stragglers) start.straggler_stalls_per_gpu_hour = 2, start.straggler_stall_ms = 125;
  // --fit-jitter-window: the jitter's window exponent too, from independent increments' 0.5.
  if (fit_jitter_window) start.jitter_window_exponent = 0.5;
  const CorpusConstants all = fit_corpus_constants(rows, start, threads);
  auto in_sample = predict_corpus(rows, all, threads);
  nlohmann::json j = {{"rows", rows.size()}, {"compared", compared}};
  auto table = [&](const std::vector<CorpusPrediction>& preds, const std::string& title, const std::string& key) {
    std::map<std::string, std::vector<double>> by_group;
    std::vector<double> everything;
    for (const auto& p : preds) by_group[p.row->source_group].push_back(p.error()), everything.push_back(p.error());
    text += fmt::format("\n{}\n  {:<34}{:>6}{:>9}{:>10}{:>9}{:>13}\n", title, "source group", "rows", "MAPE", "median", "p90",
                        "mean signed");
    nlohmann::json js = nlohmann::json::array();
    for (auto& [g, e] : by_group) {
      SourceScore s = score(g, e);
      text += fmt::format("  {:<34}{:>6}{:>8.1f}%{:>9.1f}%{:>8.1f}%{:>+12.1f}%\n", g, s.rows, 100 * s.mape, 100 * s.median_abs,
                          100 * s.p90_abs, 100 * s.mean_signed);
      js.push_back({{"group", g}, {"rows", s.rows}, {"mape", s.mape}, {"median_abs", s.median_abs}, {"p90_abs", s.p90_abs},
                    {"mean_signed", s.mean_signed}});
    }
    SourceScore s = score("all", everything);
    text += fmt::format("  {:<34}{:>6}{:>8.1f}%{:>9.1f}%{:>8.1f}%{:>+12.1f}%\n", "all rows", s.rows, 100 * s.mape, 100 * s.median_abs,
                        100 * s.p90_abs, 100 * s.mean_signed);
    j[key] = {{"groups", js}, {"all", {{"rows", s.rows}, {"mape", s.mape}, {"median_abs", s.median_abs}, {"p90_abs", s.p90_abs},
                                       {"mean_signed", s.mean_signed}}}};
    nlohmann::json jr = nlohmann::json::array();
    for (const auto& p : preds)
      jr.push_back({{"id", p.row->id}, {"group", p.row->source_group}, {"file", p.row->file}, {"line", p.row->line},
                    {"published_tokens_per_s_per_gpu", p.row->published}, {"predicted_tokens_per_s_per_gpu", p.predicted},
                    {"error", p.error()}, {"fits", p.fits}, {"memory_utilisation", p.memory_utilisation},
                    {"assumptions", p.row->assumptions}});
    j[key]["predictions"] = jr;
  };
  auto constants_text = [](const CorpusConstants& k) {
    std::string t;
    auto v = k.values();
    for (size_t i = 0; i < v.size(); ++i) t += fmt::format("{}{} {:.4g}", i ? ", " : "", CorpusConstants::names()[i], v[i]);
    return t;
  };
  text += "\nconstants fitted on every group: " + constants_text(all) + "\n";
  table(in_sample, "in sample (constants fitted on every group, including the one scored):", "in_sample");
  std::vector<CorpusPrediction> held_out_predictions;
  if (held_out) {
    HeldOutCorpus h = held_out_corpus(rows, start, threads);
    held_out_predictions = h.predictions;
    table(h.predictions, "leave one source group out (constants fitted on the other groups only):", "held_out");
    text += "\nconstants fitted without each group:\n";
    for (const auto& [g, k] : h.constants) text += fmt::format("  {:<34}{}\n", g, constants_text(k));
    // 90 % bands from the held-out residuals, and how often rows of a group fall in bands made without it.
    auto bands = error_bands(h.predictions);
    const BandCoverage coverage = band_coverage(h.predictions);
    text += "\n90 % error bands (held-out residuals, predicted/published - 1; every source group weighs the same):\n";
    nlohmann::json jb = nlohmann::json::array();
    for (const auto& b : bands) {
      text += fmt::format("  {:<8}{:<12}{:>5} rows {:>3} sources  [{:+.1f} %, {:+.1f} %]  within a source [{:+.1f} %, {:+.1f} %]\n",
                          b.gpu_generation, b.family, b.rows, b.sources, 100 * b.q05, 100 * b.q95, 100 * b.rel_q05, 100 * b.rel_q95);
      jb.push_back({{"gpu", b.gpu_generation}, {"family", b.family}, {"rows", b.rows}, {"sources", b.sources}, {"q05", b.q05}, {"q95", b.q95},
                    {"rel_q05", b.rel_q05}, {"rel_q95", b.rel_q95}});
    }
    text += fmt::format("  coverage on held-out groups (bands built without the group): {:.1f} % of {} rows; {:.1f} % per source group (mean of:",
                        100 * coverage.row_coverage, coverage.rows, 100 * coverage.per_source);
    nlohmann::json jc = nlohmann::json::array();
    for (const auto& g : coverage.groups) {
      text += fmt::format(" {} {}/{}", g.group, g.inside, g.rows);
      jc.push_back({{"group", g.group}, {"inside", g.inside}, {"rows", g.rows}});
    }
    text += ")\n";
    j["error_bands"] = jb;
    j["band_coverage"] = coverage.row_coverage;
    j["band_coverage_per_source"] = coverage.per_source;
    j["band_coverage_groups"] = jc;
    // Scaling series: per-GPU throughput change from the smallest to the largest GPU count, held out.
    text += "\nscaling series, held out (per-GPU throughput change, smallest -> largest GPU count):\n";
    nlohmann::json jsr = nlohmann::json::array();
    for (const auto& [lo, hi] : scaling_series_ends(h.predictions)) {
      const double pub = hi->row->published / lo->row->published - 1, pred = hi->predicted / lo->predicted - 1;
      text += fmt::format("  {:<52}{:>5} -> {:>5} GPUs  published {:+6.1f} %  predicted {:+6.1f} %  ({:+.1f} points)\n",
                          lo->row->series.substr(0, 51), lo->row->gpus, hi->row->gpus, 100 * pub, 100 * pred, 100 * (pred - pub));
      jsr.push_back({{"series", lo->row->series}, {"from_gpus", lo->row->gpus}, {"to_gpus", hi->row->gpus}, {"published_change", pub},
                     {"predicted_change", pred}});
    }
    j["scaling_series"] = jsr;
    if (!bands_path.empty())
      write_output_file(bands_path, error_bands_yaml(bands, fmt::format("micsim validate --corpus {} --leave-one-source-out: {} held-out rows, "
                                                                        "coverage {:.1f} % of rows ({:.1f} % per source group) on groups left out of the bands",
                                                                        dir, h.predictions.size(), 100 * coverage.row_coverage,
                                                                        100 * coverage.per_source), 10));
  }
  if (!quiet) {
    // Per row: published and predicted tokens/s per GPU in sample and, with --leave-one-source-out, the
    // row predicted with constants fitted without its source group (the out-of-sample figure).
    std::map<const CorpusRow*, const CorpusPrediction*> held;
    for (const auto& p : held_out_predictions) held[p.row] = &p;
    text += held.empty() ? "\nrows (in sample; tokens/s per GPU):\n  " + std::string(58, ' ') + " published predicted   error\n"
                         : "\nrows (tokens/s per GPU; held out = constants fitted without the row's source group):\n  " + std::string(58, ' ') +
                               " published predicted   error  held out   error\n";
    for (const auto& p : in_sample) {
      text += fmt::format("  {:<58}{:>10.0f}{:>10.0f}{:>+7.1f}%", p.row->id.substr(0, 57), p.row->published, p.predicted, 100 * p.error());
      if (auto h = held.find(p.row); h != held.end()) text += fmt::format("{:>10.0f}{:>+7.1f}%", h->second->predicted, 100 * h->second->error());
      text += fmt::format("  {}\n", p.fits ? "" : "(micsim: does not fit)");
    }
  }
  if (!json_path.empty()) write_output_file(json_path, json_text(versioned(j, "validate")));
  if (json_path != "-") write_stdout(text);
  return 0;
}

// One corpus row's scenario, as the validation runs it (the catalog's constants, which are the corpus fit
// on every row): a user can simulate, trace or sweep around a published run.
int export_corpus_scenario(const std::string& dir, const std::string& id) {
  const auto rows = load_training_corpus(dir);
  std::vector<std::string> near;
  for (const auto& r : rows) {
    if (r.id != id) {
      if (near.size() < 5 && (r.id.find(id) != std::string::npos || id.find(r.id) != std::string::npos)) near.push_back(r.id);
      continue;
    }
    if (!r.skip_reason.empty()) throw InputError({"--export-scenario", 0, 0}, id, "this row is not compared: " + r.skip_reason);
    std::string text = fmt::format("# corpus row {} ({}:{})\n# source: {}\n# published: {:.6g} tokens/s per GPU ({})\n", r.id, r.file, r.line,
                                   r.source, r.published, r.metric);
    for (const auto& a : r.assumptions) text += "# assumed: " + a + "\n";
    write_stdout(text + r.scenario_yaml);
    return 0;
  }
  std::string hint = near.empty() ? "" : " (ids containing it: " + fmt::format("{}", fmt::join(near, ", ")) + ")";
  throw InputError({"--export-scenario", 0, 0}, id, "no corpus row has this id" + hint);
}

// Megatron-LM (3-D parallel) published runs: per row, the predicted iteration time (or TFLOP/s per GPU,
// MFU) against the published one; per source and metric kind, MAPE and mean signed error. Nothing is
// fitted on these rows.
int run_megatron_validation(const std::string& dir, const std::string& json_path, bool quiet) {
  OutputPlan outputs;
  outputs.output("--json", json_path);
  const auto rows = load_megatron_rows(dir);
  const auto preds = predict_megatron(rows);
  std::string text = fmt::format("Megatron-LM published runs {}: {} rows read, {} compared (no constant fitted on them: out of sample)\n", dir,
                                 rows.size(), preds.size());
  nlohmann::json j;
  nlohmann::json jr = nlohmann::json::array();
  std::map<std::string, std::vector<double>> groups;
  std::vector<double> megatron_steps;  // Megatron-LM per-iteration time / TFLOP/s rows (Narayanan, Korthikanti)
  if (!quiet) text += fmt::format("  {:<40}{:>16}{:>11}{:>11}{:>9}{:>10}{:>10}  {}\n", "row", "metric", "published", "predicted", "error",
                                  "pub s", "pred s", "assumed");
  for (const auto& p : preds) {
    const MegatronRow& r = *p.row;
    const bool memory = r.metric.find("memory") != std::string::npos;
    const bool kor = r.id.rfind("kor22-", 0) == 0, tt = !r.family.empty(), zero3 = r.strategy == "zero3";
    const std::string group = tt      ? r.family
                              : memory ? "kor22 activation memory (analytic)"
                              : kor && r.metric.find("per_layer") != std::string::npos ? "kor22 one layer, Table 4 (22B, tp 8)"
                              : kor    ? "kor22 step time (tp, pp, sp, recompute)"
                              : zero3  ? "nar21 ZeRO-3 baseline (DeepSpeed 2021)"
                              : r.pp > 1 ? "nar21 PTD-P (tp x pp)"
                                         : "nar21 tp only (Table 1, pp = 1)";
    groups[group].push_back(p.error());
    if (!tt && !memory && !zero3 && r.metric.find("per_layer") == std::string::npos) megatron_steps.push_back(p.error());
    std::string notes;
    for (const auto& a : r.assumptions) notes += (notes.empty() ? "" : "; ") + a;
    if (!p.fits) notes += (notes.empty() ? "" : "; ") + std::string("micsim: does not fit in memory");
    if (!quiet)
      text += fmt::format("  {:<40}{:>16}{:>11.2f}{:>11.2f}{:>+8.1f}%{:>10.2f}{:>10.2f}  {}\n", r.id.substr(0, 39), r.metric, r.published,
                          p.predicted, 100 * p.error(), r.published_time_s, p.predicted_time_s, notes);
    jr.push_back({{"id", r.id}, {"file", r.file}, {"line", r.line}, {"source", r.source}, {"table", r.table}, {"metric", r.metric},
                  {"tp", r.tp}, {"pp", r.pp}, {"dp", r.dp}, {"virtual_stages", r.virtual_stages}, {"strategy", r.strategy},
                  {"published", r.published}, {"predicted", p.predicted}, {"error", p.error()},
                  {"published_iteration_time_s", r.published_time_s}, {"predicted_iteration_time_s", p.predicted_time_s},
                  {"peak_memory_gib", p.peak_memory_gib}, {"fits", p.fits}, {"assumptions", r.assumptions}});
  }
  if (!quiet)
    for (const auto& r : rows)
      if (!r.skip_reason.empty()) text += fmt::format("  {:<40} not compared: {}\n", r.id.substr(0, 39), r.skip_reason);
  text += "summary (error = predicted / published - 1):\n";
  nlohmann::json js = nlohmann::json::array();
  std::vector<double> all_time;
  for (const auto& [g, errs] : groups) {
    double mape = 0, signed_sum = 0, worst = 0;
    for (double e : errs) mape += std::fabs(e), signed_sum += e, worst = std::max(worst, std::fabs(e));
    mape /= double(errs.size()), signed_sum /= double(errs.size());
    if (g.find("memory") == std::string::npos && g.find("ZeRO-3") == std::string::npos) all_time.insert(all_time.end(), errs.begin(), errs.end());
    text += fmt::format("  {:<42}{:>4} rows  MAPE {:5.1f} %  mean signed {:+5.1f} %  worst {:5.1f} %\n", g, errs.size(), 100 * mape,
                        100 * signed_sum, 100 * worst);
    js.push_back({{"group", g}, {"rows", errs.size()}, {"mape", mape}, {"mean_signed_error", signed_sum}, {"worst_abs_error", worst}});
  }
  // One aggregate line: MAPE, mean signed error, median and p90 of |error|.
  auto aggregate = [&](const char* label, const std::vector<double>& errs) {
    double mape = 0, signed_sum = 0;
    for (double e : errs) mape += std::fabs(e), signed_sum += e;
    mape /= double(errs.size()), signed_sum /= double(errs.size());
    const auto s = summarize_errors(errs);
    text += fmt::format("  {:<42}{:>4} rows  MAPE {:5.1f} %  mean signed {:+5.1f} %  median {:.1f} %  p90 {:.1f} %\n", label, errs.size(),
                        100 * mape, 100 * signed_sum, 100 * s.median_abs, 100 * s.p90_abs);
    return nlohmann::json{{"group", label}, {"rows", errs.size()}, {"mape", mape}, {"mean_signed_error", signed_sum}};
  };
  if (!megatron_steps.empty()) j["megatron_step_rows"] = aggregate("Megatron-LM iteration time / TFLOP/s rows", megatron_steps);
  if (!all_time.empty()) {
    const nlohmann::json a = aggregate("all step-time / throughput rows (not ZeRO-3)", all_time);
    j["mape"] = a["mape"];
    j["mean_signed_error"] = a["mean_signed_error"];
  }
  j["rows"] = jr;
  j["groups"] = js;
  if (!json_path.empty()) write_output_file(json_path, json_text(versioned(j, "validate")));
  if (json_path != "-") write_stdout(text);
  return 0;
}

}  // namespace

Runner add_validate(CLI::App& app) {
  struct Opts {
    std::vector<std::string> datasets;
    std::string instance, json, calibration, op, corpus, bands, megatron, export_row;
    bool quiet = false, held_out = false, fit_stragglers = false, fit_jitter_window = false;
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("validate", "Compare predictions with published or measured results");
  cmd->add_option("dataset", o->datasets, "nccl-tests CSV rows or logs, the MosaicML table, training-results.csv");
  cmd->add_option("--corpus", o->corpus, "The training-throughput corpus directory (validation/data/training-corpus): "
                                         "every published run vs micsim on tokens/s per GPU");
  cmd->add_option("--megatron", o->megatron, "The Megatron-LM published runs (validation/data/megatron): tensor/pipeline/sequence-"
                                             "parallel step times and TFLOP/s per GPU vs micsim");
  cmd->add_option("--threads", o->threads, "Worker threads (default: every core)")->check(CLI::Range(0, 1024));
  cmd->add_option("--write-bands", o->bands, "With --corpus --leave-one-source-out: write the 90 % error bands (YAML, the format of "
                                             "models/catalog/error_bands.yaml) to FILE");
  cmd->add_option("--export-scenario", o->export_row, "With --corpus: print the scenario micsim builds from the corpus row with this id "
                                                     "(YAML, for `micsim simulate`), its source and published value, and stop")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? std::string("an empty id") : std::string(); }, "ID", "non-empty"));
  cmd->add_option("--instance", o->instance, "Instance for logs (CSV rows name their cluster)");
  cmd->add_option("--calibration", o->calibration, "Calibration file to apply");
  cmd->add_option("--op", o->op, "Collective of a log that does not name it");
  cmd->add_option("--json", o->json, "Write rows and summaries as JSON to FILE ('-' = stdout)");
  cmd->add_flag("--quiet,-q", o->quiet, "Print the summary only");
  cmd->add_flag("--fit-stragglers", o->fit_stragglers,
                "With --corpus: also fit the straggler terms (calibration straggler_stalls_per_gpu_hour, straggler_stall_ms) "
                "on the rows and the scaling series' per-GPU throughput change (off: they stay 0, micsim's default)");
  cmd->add_flag("--fit-jitter-window", o->fit_jitter_window,
                "With --corpus: also fit how the jitter's CV shrinks over longer micro-steps (calibration jitter_window_exponent) "
                "on the rows and the scaling series' per-GPU throughput change");
  cmd->add_flag("--leave-one-source-out", o->held_out,
                "nccl-tests: score each source with network terms fitted on the other sources only (per fabric, by node count)");
  return [o]() -> int {
    if (o->datasets.empty() && o->corpus.empty() && o->megatron.empty())
      throw InputError({"micsim validate", 0, 0}, "", "give datasets (nccl-tests, MosaicML, training-results), --corpus DIR or --megatron DIR");
    // Published-run datasets are scored with the catalog's terms (the corpus fits its own constants):
    // a calibration file would silently not apply, so it is refused.
    if (!o->calibration.empty() && (!o->megatron.empty() || !o->corpus.empty()))
      throw InputError({"--calibration", 0, 0}, "", "not with --megatron or --corpus (their rows run on the catalog's terms; the corpus fits its own constants)");
    if (!o->megatron.empty()) return run_megatron_validation(o->megatron, o->json, o->quiet);
    if (!o->bands.empty() && (o->corpus.empty() || !o->held_out))
      throw InputError({"--write-bands", 0, 0}, "", "needs --corpus DIR and --leave-one-source-out (the bands are out-of-sample residuals)");
    if (!o->export_row.empty()) {
      if (o->corpus.empty()) throw InputError({"--export-scenario", 0, 0}, "", "needs --corpus DIR (the row is one of the corpus's)");
      return export_corpus_scenario(o->corpus, o->export_row);
    }
    if (o->fit_stragglers && o->corpus.empty()) throw InputError({"--fit-stragglers", 0, 0}, "", "needs --corpus DIR (it fits the corpus's constants)");
    if (o->fit_jitter_window && o->corpus.empty())
      throw InputError({"--fit-jitter-window", 0, 0}, "", "needs --corpus DIR (it fits the corpus's constants)");
    if (!o->corpus.empty())
      return run_corpus_validation(o->corpus, o->held_out, o->json, o->bands, o->quiet, o->threads, o->fit_stragglers, o->fit_jitter_window);
    if (!o->instance.empty()) lookup_instance("--instance", o->instance);
    OutputPlan outputs;
    outputs.input(o->calibration);
    for (const auto& d : o->datasets) outputs.input(d);
    outputs.output("--json", o->json);
    std::optional<Calibration> cal;
    if (!o->calibration.empty()) cal = load_calibration(o->calibration);
    // Training-result datasets (MosaicML, training-results.csv) are compared row by row on their metric.
    std::vector<std::string> nccl_sets;
    std::string training_text;
    nlohmann::json training_json = nlohmann::json::array();
    for (const auto& d : o->datasets) {
      if (!is_training_dataset(d)) {
        nccl_sets.push_back(d);
        continue;
      }
      auto rows = load_training_dataset(d);
      auto cmp = compare_training(rows);
      training_text += fmt::format("== {} ({} rows, {} compared)\n", d, rows.size(), cmp.size());
      if (!o->quiet) {
        training_text += fmt::format("  {:<46}{:>19}{:>11}{:>11}{:>9}  {}\n", "row", "metric", "published", "predicted", "error", "notes");
        for (const auto& c : cmp) {
          std::string notes;
          if (c.row.published_params && *c.row.published_params != c.params)
            notes += fmt::format("params {} vs published {}; ", c.params, *c.row.published_params);
          if (!c.fits) notes += "micsim says it does not fit; ";
          if (!c.row.assumptions.empty()) notes += "assumed: " + c.row.assumptions;
          training_text += fmt::format("  {:<46}{:>19}{:>11.3f}{:>11.3f}{:>8.1f}%  {}\n", c.row.id.substr(0, 45), c.row.metric,
                                       c.row.published, c.predicted, 100 * c.error(), notes);
        }
        for (const auto& r : rows)
          if (!r.skip_reason.empty()) training_text += fmt::format("  {:<46} skipped: {}\n", r.id.substr(0, 45), r.skip_reason);
      }
      std::map<std::string, std::vector<double>> by_metric;
      for (const auto& c : cmp) by_metric[c.row.metric].push_back(std::fabs(c.error()));
      for (const auto& [metric, errs] : by_metric) {
        double mape = 0;
        for (double e : errs) mape += e;
        mape /= double(errs.size());
        auto s = summarize_errors(errs);
        std::string convention;
        for (const auto& c : cmp)
          if (c.row.metric == metric) convention = c.row.convention;
        training_text += fmt::format("  {}: {} rows, MAPE {:.1f} %, median {:.1f} %, p90 {:.1f} % ({})\n", metric, errs.size(), 100 * mape,
                                     100 * s.median_abs, 100 * s.p90_abs, convention);
      }
      training_text += "\n";
      for (const auto& c : cmp)
        training_json.push_back({{"dataset", c.row.dataset}, {"id", c.row.id}, {"source", c.row.source}, {"metric", c.row.metric},
                                 {"published", c.row.published}, {"predicted", c.predicted}, {"error", c.error()},
                                 {"convention", c.row.convention}, {"assumptions", c.row.assumptions}, {"params", c.params},
                                 {"file", c.row.file}, {"line", c.row.line}});
    }
    if (nccl_sets.empty()) {
      if (!o->json.empty()) write_output_file(o->json, json_text(versioned(nlohmann::json{{"training_rows", training_json}}, "validate")));
      if (o->json != "-") write_stdout(training_text);
      return 0;
    }
    if (o->held_out) {
      std::vector<NcclTestRow> rows;
      for (const auto& d : nccl_sets) {
        auto r = load_nccl_tests(d, {o->op, 0, 0});
        rows.insert(rows.end(), r.begin(), r.end());
      }
      auto held = compare_collectives_held_out(rows, ClusterMap::builtin());
      // Per fabric and node-count band: median |error| and mean signed error, held-out rows only.
      // Beside it, how far the sources disagree where several measured the same point (the floor of
      // any fabric-level model's held-out error).
      struct Acc { std::vector<double> err, disagree; std::set<std::string> sources; size_t in_sample = 0, at_prior = 0; };
      std::map<std::pair<std::string, std::string>, Acc> acc;
      // The same per source file (multi-node rows): which source a band's error comes from.
      struct SourceAcc { std::vector<double> err; std::set<int> nodes; std::set<std::string> at_prior; };
      std::map<std::pair<std::string, std::string>, SourceAcc> by_source;
      const std::vector<double> deviation = between_source_deviation(held);
      nlohmann::json jrows = nlohmann::json::array();
      for (size_t i = 0; i < held.size(); ++i) {
        const HeldOutComparison& h = held[i];
        const std::string band = h.c.row.nodes >= 4 ? "4+ nodes" : h.c.row.nodes >= 2 ? "2-3 nodes" : "1 node";
        Acc& a = acc[{h.fabric, band}];
        if (!std::isnan(deviation[i])) a.disagree.push_back(deviation[i]);
        if (!h.held_out) {
          ++a.in_sample;
          continue;
        }
        a.err.push_back(h.c.error());
        a.sources.insert(h.c.row.file);
        if (!h.at_prior.empty()) ++a.at_prior;
        if (h.c.row.nodes >= 2) {
          SourceAcc& s = by_source[{h.fabric, h.c.row.file}];
          s.err.push_back(h.c.error());
          s.nodes.insert(h.c.row.nodes);
          s.at_prior.insert(h.at_prior.begin(), h.at_prior.end());
        }
        jrows.push_back({{"fabric", h.fabric}, {"instance", h.c.instance}, {"file", h.c.row.file}, {"line", h.c.row.line},
                         {"op", h.c.row.op_name}, {"nodes", h.c.row.nodes}, {"bytes", json_bytes(h.c.row.bytes)}, {"metric", h.c.metric},
                         {"published", h.c.published}, {"predicted", h.c.predicted}, {"error", h.c.error()},
                         {"training_rows", h.training_rows},
                         {"source_deviation", std::isnan(deviation[i]) ? nlohmann::json() : nlohmann::json(deviation[i])}});
      }
      std::string text = fmt::format("Leave one source out: each file scored with network terms fitted on the other files of its "
                                     "instance\n{:<18}{:<11}{:>6}{:>9}{:>12}{:>12}{:>10}{:>10}  {:<22}{}\n", "fabric", "nodes", "rows",
                                     "sources", "median |e|", "mean error", "p90 |e|", "at prior", "sources disagree",
                                     "not held out (no other source)");
      nlohmann::json jsum = nlohmann::json::array();
      for (const auto& [key, a] : acc) {
        auto s = summarize_errors(a.err);
        double mean = 0;
        for (double e : a.err) mean += e;
        mean = a.err.empty() ? 0 : mean / double(a.err.size());
        const auto d = summarize_errors(a.disagree);
        const std::string disagree = a.disagree.empty() ? "-" : fmt::format("{:.1f}% ({} rows)", 100 * d.median_abs, a.disagree.size());
        text += fmt::format("{:<18}{:<11}{:>6}{:>9}{:>11.1f}%{:>+11.1f}%{:>9.1f}%{:>10}  {:<22}{}\n", key.first, key.second, a.err.size(),
                            a.sources.size(), 100 * s.median_abs, 100 * mean, 100 * s.p90_abs, a.at_prior, disagree,
                            a.in_sample ? fmt::format("{} rows", a.in_sample) : "");
        jsum.push_back({{"fabric", key.first}, {"nodes", key.second}, {"rows", a.err.size()}, {"sources", a.sources.size()},
                        {"median_abs_error", s.median_abs}, {"mean_error", mean}, {"p90_abs_error", s.p90_abs},
                        {"rows_not_held_out", a.in_sample},
                        {"rows_at_prior", a.at_prior},
                        {"source_disagreement_median_abs", a.disagree.empty() ? nlohmann::json() : nlohmann::json(d.median_abs)},
                        {"source_disagreement_rows", a.disagree.size()}});
      }
      text += fmt::format("\nBy source, multi-node rows held out (at prior: catalog terms fitted on the file itself that the other "
                          "files cannot fit, scored at a generic prior instead):\n{:<18}{:<62}{:>6}{:>12}{:>12}  {:<14}{}\n", "fabric",
                          "file", "rows", "median |e|", "mean error", "nodes", "at prior");
      nlohmann::json jsrc = nlohmann::json::array();
      for (const auto& [key, s] : by_source) {
        const auto e = summarize_errors(s.err);
        std::string nodes;
        for (int n : s.nodes) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
        const std::string name = std::filesystem::path(key.second).filename().string();
        std::string priors;
        for (const auto& t : s.at_prior) priors += (priors.empty() ? "" : ", ") + t;
        text += fmt::format("{:<18}{:<62}{:>6}{:>11.1f}%{:>+11.1f}%  {:<14}{}\n", key.first, name.substr(0, 61), s.err.size(),
                            100 * e.median_abs, 100 * e.mean_signed, nodes, priors.empty() ? "-" : priors);
        jsrc.push_back({{"fabric", key.first}, {"file", key.second}, {"rows", s.err.size()}, {"median_abs_error", e.median_abs},
                        {"mean_error", e.mean_signed}, {"nodes", std::vector<int>(s.nodes.begin(), s.nodes.end())},
                        {"at_prior", std::vector<std::string>(s.at_prior.begin(), s.at_prior.end())}});
      }
      if (!o->json.empty())
        write_output_file(o->json, json_text(versioned({{"held_out_rows", jrows}, {"held_out_summary", jsum}, {"held_out_by_source", jsrc}}, "validate")));
      if (o->json != "-") write_stdout(text);
      return 0;
    }
    std::vector<CollectiveComparison> all;
    for (const auto& d : nccl_sets) {
      auto rows = load_nccl_tests(d, {o->op, 0, 0});
      // A log whose run set a variable micsim has no term for is still predicted when --instance names
      // the machine, with NCCL's defaults: say so, as the comparison then measures that setting too.
      if (!o->instance.empty() && !rows.empty())
        if (const std::string v = ClusterMap::builtin().unmodelled_setting(rows.front().environment); !v.empty())
          std::cerr << "micsim: warning: " << d << ": the run set " << v
                    << ", which micsim has no term for; its rows are predicted with NCCL's defaults\n";
      auto cmp = compare_collectives(rows, ClusterMap::builtin(), o->instance, cal ? &*cal : nullptr);
      all.insert(all.end(), cmp.begin(), cmp.end());
    }
    std::string text;
    if (!o->quiet) {
      text += fmt::format("{:<24}{:<15}{:>6}{:>13}{:>7}{:>14}{:>14}{:>9}  {}\n", "instance", "op", "nodes", "bytes",
                          "metric", "published", "predicted", "error", "algorithm");
      for (const auto& c : all) {
        auto val = [&](double v) {
          return c.metric == "busbw" ? fmt::format("{:.2f} GB/s", v / 1e9) : human_seconds(v);
        };
        text += fmt::format("{:<24}{:<15}{:>6}{:>13.0f}{:>7}{:>14}{:>14}{:>8.1f}%  {}/{}\n", c.instance, c.row.op_name,
                            c.row.nodes, c.row.bytes, c.metric, val(c.published), val(c.predicted), 100 * c.error(),
                            to_string(c.estimate.algorithm), to_string(c.estimate.protocol));
      }
      text += "\n";
    }
    // Summary per source (the citation column), then overall.
    std::map<std::string, std::vector<const CollectiveComparison*>> by_source;
    for (const auto& c : all) by_source[c.row.source.substr(0, 70) + " | " + c.instance].push_back(&c);
    nlohmann::json jsum = nlohmann::json::array();
    text += fmt::format("{:<96}{:>6}{:>10}{:>10}{:>10}{:>10}\n", "source | instance", "rows", "busbw med", "busbw p90",
                        "time med", "time p90");
    std::vector<double> all_bus, all_time, all_err;
    for (const auto& [src, v] : by_source) {
      std::vector<double> bus, tim;
      for (const auto* c : v) (c->metric == "busbw" ? bus : tim).push_back(c->error());
      auto sb = summarize_errors(bus), st = summarize_errors(tim);
      auto pct = [](const ErrorSummary& s, double x) { return s.count ? fmt::format("{:.1f}%", 100 * x) : std::string("-"); };
      text += fmt::format("{:<96}{:>6}{:>10}{:>10}{:>10}{:>10}\n", src, v.size(), pct(sb, sb.median_abs), pct(sb, sb.p90_abs),
                          pct(st, st.median_abs), pct(st, st.p90_abs));
      all_bus.insert(all_bus.end(), bus.begin(), bus.end());
      all_time.insert(all_time.end(), tim.begin(), tim.end());
      jsum.push_back({{"source", src}, {"rows", v.size()}, {"busbw_rows", sb.count}, {"busbw_median_abs_error", sb.median_abs},
                      {"busbw_p90_abs_error", sb.p90_abs}, {"time_rows", st.count}, {"time_median_abs_error", st.median_abs},
                      {"time_p90_abs_error", st.p90_abs}});
    }
    all_err = all_bus;
    all_err.insert(all_err.end(), all_time.begin(), all_time.end());
    auto sa = summarize_errors(all_err), sb = summarize_errors(all_bus), st = summarize_errors(all_time);
    text += fmt::format("\nall rows: {} compared; median |error| {:.1f}%, p90 {:.1f}% (busbw {} rows: median {:.1f}%, "
                        "p90 {:.1f}%; time {} rows: median {:.1f}%, p90 {:.1f}%)\n",
                        sa.count, 100 * sa.median_abs, 100 * sa.p90_abs, sb.count, 100 * sb.median_abs,
                        100 * sb.p90_abs, st.count, 100 * st.median_abs, 100 * st.p90_abs);
    if (!o->json.empty()) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& c : all)
        rows.push_back({{"instance", c.instance}, {"cluster", c.row.cluster}, {"source", c.row.source}, {"op", c.row.op_name},
                        {"ranks", c.row.ranks}, {"nodes", c.row.nodes}, {"bytes", json_bytes(c.row.bytes)}, {"metric", c.metric},
                        {"published", c.published}, {"predicted", c.predicted}, {"error", c.error()},
                        {"algorithm", to_string(c.estimate.algorithm)}, {"protocol", to_string(c.estimate.protocol)},
                        {"file", c.row.file}, {"line", c.row.line}});
      nlohmann::json j = {{"rows", rows}, {"sources", jsum}, {"training_rows", training_json},
                          {"overall", {{"rows", sa.count}, {"median_abs_error", sa.median_abs}, {"p90_abs_error", sa.p90_abs}}}};
      write_output_file(o->json, json_text(versioned(j, "validate")));
    }
    if (o->json != "-") write_stdout(training_text + text);
    return 0;
  };
}

}  // namespace micsim::cli
