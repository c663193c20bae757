// micsim calibrate --nccl-tests FILE... --instance NAME --out calibration.yaml
// Fits the network terms (per-fabric latency, bandwidth efficiency; NVLink efficiency and latency on
// single-node rows) to measured nccl-tests results, prints per-row residuals and writes a
// calibration file that scenarios load with `calibration:`. --gemm / --kernels fit the compute
// kernels' terms; --runs, last, fits the in-step compute scales to measured training steps
// (validation/measured_runs.hpp).
#include <set>
#include <fmt/format.h>

#include <iostream>

#include "models/hardware/catalog.hpp"
#include "cli/commands.hpp"
#include "models/io/json_text.hpp"
#include "sim/report/report.hpp"
#include "validation/collective_validation.hpp"
#include "validation/gemm.hpp"
#include "validation/kernel_fit.hpp"
#include "validation/measured_runs.hpp"
#include "validation/training_corpus.hpp"

namespace micsim::cli {

namespace {

// Per kind of kernel row (gemm, fp8 gemm, attention <kernel>, hbm): how many rows, and the median
// |error| and mean signed error of the catalog's terms and of the fit.
void print_kernel_summary(const KernelFit& kf, std::ostream& log) {
  log << fmt::format("  {:<22}{:>6}  {:>28}  {:>28}\n", "kind", "rows", "catalog: median |e|, mean", "fitted: median |e|, mean");
  for (const auto& [kind, e] : errors_by_kind(kf))
    log << fmt::format("  {:<22}{:>6}  {:>19.1f}%, {:>+5.1f}%  {:>19.1f}%, {:>+5.1f}%\n", kind, e.rows, 100 * e.catalog.median_abs,
                       100 * e.catalog.mean_signed, 100 * e.fitted.median_abs, 100 * e.fitted.mean_signed);
}

// Fits compute.gemm_scale and compute.attention_scale to the measured runs (with `c` laid over each
// run's scenario), prints each run's error before, after and held out, and sets both in `c`.
void fit_runs(const InstanceSpec& inst, const std::vector<std::string>& files, Calibration& c, std::vector<std::string>& sources,
              std::ostream& log) {
  std::vector<MeasuredRun> runs;
  for (const auto& f : files) {
    auto r = load_measured_runs(f);
    runs.insert(runs.end(), r.begin(), r.end());
  }
  const RunFit fit = fit_measured_runs(inst.name, runs, c);
  log << fmt::format("calibrating the in-step compute of {} on {} measured training runs ({} iterations)\n\n", inst.name, runs.size(),
                     fit.iterations);
  log << fmt::format("{:<32}{:>16}{:>14}{:>13}{:>13}  {}\n", "run (scenario name)", "tokens/s/GPU", "error before", "error after",
                     fit.held_out ? "held out" : "", "file:line");
  std::vector<double> before, after, held;
  for (const auto& r : fit.rows) {
    log << fmt::format("{:<32}{:>16.1f}{:>13.1f}%{:>12.1f}%{:>13}  {}:{}\n", r.name, r.measured, 100 * r.before, 100 * r.after,
                       fit.held_out ? fmt::format("{:.1f}%", 100 * r.held_out) : "", r.run->file, r.run->line);
    before.push_back(r.before), after.push_back(r.after), held.push_back(r.held_out);
  }
  auto line = [&](const char* what, const std::vector<double>& e) {
    const SourceScore sc = score(what, e);
    log << fmt::format("  {:<38} MAPE {:5.1f}%, mean signed {:+.1f}%\n", what, 100 * sc.mape, 100 * sc.mean_signed);
  };
  log << "\n";
  line("before (catalog / base constants)", before);
  line("after (fitted on every run)", after);
  if (fit.held_out) line("held out (each run left out in turn)", held);
  else log << "  (no held-out error with fewer than 3 runs: the fitted constants are only checked on the runs they were fitted on)\n";
  log << fmt::format("gemm_scale {:.4f} (was {:.4f}), attention_scale {:.4f} (was {:.4f}); runs weighed at {:.1f} % scatter (the error "
                     "bands' spread within one stack), weak prior: sigma {} in log around the starting values\n\n",
                     fit.gemm_scale, fit.gemm_scale_start, fit.attention_scale, fit.attention_scale_start, 100 * fit.run_sigma,
                     kScalePriorSigma);
  c.gemm_scale = fit.gemm_scale;
  c.attention_scale = fit.attention_scale;
  sources.push_back(fmt::format("{} measured training runs from {}", runs.size(), join_choices(files)));
}

}  // namespace

Runner add_calibrate(CLI::App& app) {
  struct Opts {
    std::vector<std::string> nccl_tests, gemm, runs;
    std::string instance, out, op, base, kernels;
    int ranks = 0, nodes = 0;
    bool two_node_ar = false, collnet = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit a calibration file to measurements");
  cmd->add_option("--nccl-tests", o->nccl_tests, "nccl-tests output (text log or published CSV rows); repeatable");
  cmd->add_option("--gemm", o->gemm, "GEMM timings CSV (m,n,k,[batch],[dtype],time_us|tflops), e.g. the harness's gemm.csv; repeatable");
  cmd->add_option("--runs", o->runs,
                  "Measured training steps (CSV: scenario,tokens_per_s_per_gpu | tokens_per_s | step_time_s; scenario paths relative to "
                  "the CSV): fit the in-step GEMM and attention scales, after the network terms; repeatable");
  cmd->add_option("--base", o->base, "Start from this calibration file (its other terms are kept)");
  cmd->add_option("--kernels", o->kernels,
                  "Directory of published kernel measurements (gemm/, attention/, hbm/ CSVs, e.g. validation/data): fit the "
                  "instance GPU's GEMM, FP8, attention and HBM terms");
  cmd->add_option("--instance", o->instance, "Catalog instance the measurements were taken on")->required();
  cmd->add_option("--out", o->out, "Calibration file to write (YAML)")->required();
  cmd->add_option("--op", o->op, "Collective of a log that does not name it (all_reduce, all_gather, ...)");
  cmd->add_option("--ranks", o->ranks, "Ranks of a log without '# Rank' lines")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--nodes", o->nodes, "Nodes of a log without '# Rank ... on HOST' lines")->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--include-two-node-allreduce", o->two_node_ar,
                "Also fit 2-node all_reduce rows (NCCL runs tree there; excluded by default)");
  cmd->add_flag("--collnet", o->collnet,
                "The logs ran with in-network reduction (NCCL_COLLNET_ENABLE=1 on SHARP switches) though they do not say so; "
                "a log that prints NCCL_COLLNET_ENABLE and SHARP is read as such anyway");
  return [o]() -> int {
    const InstanceSpec& inst = lookup_instance("--instance", o->instance);
    if (o->nccl_tests.empty() && o->gemm.empty() && o->kernels.empty() && o->runs.empty())
      throw InputError({"micsim calibrate", 0, 0}, "", "give --nccl-tests FILE..., --gemm FILE..., --kernels DIR or --runs FILE...");
    OutputPlan outputs;
    outputs.input(o->base);
    for (const auto& f : o->gemm) outputs.input(f);
    for (const auto& f : o->nccl_tests) outputs.input(f);
    for (const auto& f : o->runs) outputs.input(f);
    outputs.output("--out", o->out);
    // The fit's table goes to stdout, or to stderr when the calibration itself is written there.
    std::ostream& log = o->out == "-" ? std::cerr : std::cout;
    Calibration c;
    if (!o->base.empty()) c = load_calibration(o->base);
    std::vector<std::string> sources;
    if (!o->kernels.empty()) {
      KernelFit kf = fit_kernels(inst.gpu, o->kernels);
      log << fmt::format("calibrating compute kernels of {} on published measurements in {}\n", inst.gpu.name, o->kernels);
      // Each row against the catalog's terms (before the fit: how far the catalog is from this hardware,
      // out of sample for rows the catalog was not fitted on) and against the fit (in sample).
      log << fmt::format("  {:<34}{:>9}{:>9}  {}\n", "row (time error: predicted/measured - 1)", "catalog", "fitted", "file:line");
      for (const auto& r : kf.rows)
        log << fmt::format("  {:<34}{:>8.1f}%{:>8.1f}%  {}:{}\n", r.what, 100 * r.catalog_error, 100 * r.error, r.file, r.line);
      print_kernel_summary(kf, log);
      auto show = [&](const char* name, const std::optional<double>& v, size_t rows, double scale = 1) {
        log << fmt::format("  {:<30} {}  ({} rows)\n", name, v ? fmt::format("{:.4g}", *v * scale) : std::string("not fitted"), rows);
      };
      show("gemm_efficiency", kf.calibration.gemm_efficiency, kf.gemm_rows);
      show("gemm_dim_half", kf.calibration.gemm_dim_half, kf.gemm_rows);
      show("gemm_overhead_us", kf.calibration.gemm_overhead_s, kf.gemm_rows, 1e6);
      show("gemm_fp8_efficiency", kf.calibration.gemm_fp8_efficiency, kf.fp8_rows);
      show("attention_efficiency", kf.calibration.attention_efficiency, kf.fa2().forward_rows);
      show("attention_backward_efficiency", kf.calibration.attention_backward_efficiency, kf.fa2().backward_rows);
      show("attention_seq_half_causal", kf.calibration.attention_seq_half_causal, kf.fa2().causal_sweep_rows);
      show("attention_seq_half_full", kf.calibration.attention_seq_half_full, kf.fa2().full_sweep_rows);
      show("hbm_efficiency", kf.calibration.hbm_efficiency, kf.hbm_rows);
      // The other fused kernels go to the catalog's attention_kernels (a calibration file holds the
      // kernel the user's stack runs, as attention_efficiency).
      for (const auto& [kernel, k] : kf.attention_kernels) {
        if (kernel == AttentionKernel::FA2) continue;
        auto half = [](size_t rows, double h) { return rows ? fmt::format("{:.0f}", h) : std::string("not fitted"); };
        log << fmt::format("  attention_kernels.{}: forward {}, backward {}, seq_half causal {}, full {}  ({} + {} rows, sweeps {} + {}; "
                           "catalog key, not written to the calibration)\n",
                           to_string(kernel), k.forward_rows ? fmt::format("{:.4g}", k.efficiency.forward) : "not fitted",
                           k.backward_rows ? fmt::format("{:.4g}", k.efficiency.backward) : "not fitted",
                           half(k.causal_sweep_rows, k.efficiency.seq_half.causal), half(k.full_sweep_rows, k.efficiency.seq_half.full),
                           k.forward_rows, k.backward_rows, k.causal_sweep_rows, k.full_sweep_rows);
      }
      // Nothing measured on this GPU: a calibration file that changes nothing would look like a fit.
      if (kf.calibration.empty() && kf.attention_kernels.empty())
        throw InputError({o->kernels, 0, 0}, "", fmt::format("no kernel measurement of {} (or its family) here: nothing to fit", inst.gpu.name));
      c.overlay(kf.calibration);
      sources.push_back("published kernel measurements: " + join_choices(kf.files));
    }
    if (!o->gemm.empty()) {
      std::vector<GemmRow> rows;
      for (const auto& f : o->gemm) {
        auto r = load_gemm_csv(f);
        rows.insert(rows.end(), r.begin(), r.end());
      }
      GemmFit gf = fit_gemm(inst.gpu, rows);
      if (gf.rows.empty()) throw InputError({o->gemm.front(), 0, 0}, "dtype", "no rows in a precision " + inst.gpu.name + " supports");
      log << fmt::format("calibrating compute of {} on {} GEMMs ({} iterations)\n\n", inst.gpu.name, gf.rows.size(), gf.iterations);
      log << fmt::format("{:>9}{:>9}{:>9}{:>6}{:>6}{:>12}{:>10}{:>13}{:>13}  {}\n", "m", "n", "k", "batch", "dtype",
                               "measured", "TFLOPS", "error before", "error after", "file:line");
      for (size_t i = 0; i < gf.rows.size(); ++i) {
        const auto& r = gf.rows[i];
        log << fmt::format("{:>9}{:>9}{:>9}{:>6}{:>6}{:>12}{:>10.1f}{:>12.1f}%{:>12.1f}%  {}:{}\n", r.shape.m, r.shape.n, r.shape.k,
                                 r.shape.batch, to_string(r.dtype), human_seconds(r.time_s), r.shape.flops() / r.time_s / 1e12,
                                 100 * gf.before[i], 100 * gf.after[i], r.file, r.line);
      }
      auto sb = summarize_errors(gf.before), sa = summarize_errors(gf.after);
      log << fmt::format("median |error| {:.1f}% -> {:.1f}%, p90 {:.1f}% -> {:.1f}%\n", 100 * sb.median_abs,
                               100 * sa.median_abs, 100 * sb.p90_abs, 100 * sa.p90_abs);
      log << fmt::format("gemm_efficiency {:.3f}, gemm_dim_half {:.1f}, gemm_overhead_us {:.2f}\n\n", *gf.calibration.gemm_efficiency,
                               *gf.calibration.gemm_dim_half, *gf.calibration.gemm_overhead_s * 1e6);
      c.overlay(gf.calibration);
      sources.push_back(fmt::format("{} GEMM timings from {}", gf.rows.size(), join_choices(o->gemm)));
    }
    // Last, on everything fitted above: the measured training steps set the in-step compute scales.
    auto finish = [&]() -> int {
      if (!o->runs.empty()) fit_runs(inst, o->runs, c, sources, log);
      c.instance = inst.name;
      c.source = "micsim calibrate on " + join_choices(sources);
      write_output_file(o->out, c.to_yaml());
      if (o->out != "-") log << "wrote " << o->out << "\n";
      return 0;
    };
    if (o->nccl_tests.empty()) return finish();
    std::vector<NcclTestRow> rows;
    NcclTestsOptions lopt{o->op, o->ranks, o->nodes};
    ClusterMap map = ClusterMap::builtin();
    // Published CSVs mix clusters: keep the rows of this instance. Files that name no known cluster
    // (a user's own logs or CSVs) are taken whole.
    std::vector<NcclTestRow> loaded;
    bool any_mapped = false;
    for (const auto& f : o->nccl_tests) {
      auto r = load_nccl_tests(f, lopt);
      for (const auto& x : r) any_mapped |= !x.cluster.empty() && map.instance_for(x).has_value();
      loaded.insert(loaded.end(), r.begin(), r.end());
    }
    for (const auto& x : loaded)
      if (!any_mapped || map.instance_for(x) == inst.name) rows.push_back(x);
    if (o->collnet) {
      if (std::string why = collnet_problem_if_enabled(inst.network); !why.empty())
        throw InputError({"--collnet", 0, 0}, "collnet", why);
      for (auto& x : rows) x.collnet = true;
    }
    FitOptions fo;
    fo.include_two_node_allreduce = o->two_node_ar;
    NetworkFit fit = fit_network(inst, rows, fo);
    if (fit.rows.empty() || fit.fitted.empty())
      throw InputError({o->nccl_tests.front(), 0, 0}, "",
                       "no rows to fit for " + inst.name +
                           ": need single-node rows, all_gather/reduce_scatter rows, or all_reduce rows of 4+ nodes "
                           "(--include-two-node-allreduce adds 2-node all_reduce rows)");
    log << fmt::format("calibrating {} on {} rows ({} iterations); fitted: {}\n", inst.name, fit.rows.size(),
                             fit.iterations, join_choices(fit.fitted));
    if (!fit.unmoved.empty())  // e.g. a 2-node all_reduce bound by NVLink says nothing of the network's rate
      log << fmt::format("no row moves {}: kept at the catalog's value, not written\n", join_choices(fit.unmoved));
    log << "\n";
    log << fmt::format("{:<15}{:>6}{:>6}{:>13}{:>13}{:>13}{:>13}  {}\n", "op", "ranks", "nodes", "bytes",
                             "measured", "error before", "error after", "file:line");
    for (size_t i = 0; i < fit.rows.size(); ++i) {
      const auto& r = fit.rows[i];
      log << fmt::format("{:<15}{:>6}{:>6}{:>13.0f}{:>13}{:>12.1f}%{:>12.1f}%  {}:{}\n", r.op_name, r.ranks, r.nodes,
                               r.bytes, human_seconds(*r.time_or_derived()), 100 * fit.before[i], 100 * fit.after[i],
                               r.file, r.line);
    }
    auto sb = summarize_errors(fit.before), sa = summarize_errors(fit.after);
    log << fmt::format("\nmedian |error| {:.1f}% -> {:.1f}%, p90 {:.1f}% -> {:.1f}%\n", 100 * sb.median_abs,
                             100 * sa.median_abs, 100 * sb.p90_abs, 100 * sa.p90_abs);
    c.overlay(fit.calibration);
    // The node counts its inter-node efficiencies rest on, where this fit set them (a --base file's range
    // stays with the base's efficiencies): beyond them a simulation says it extrapolates.
    if (fit.calibration.sets_inter_efficiency()) {
      std::optional<NodeRange> range;
      for (const auto& r : fit.rows)
        if (r.nodes >= 2) range = range ? range->including(r.nodes) : NodeRange{r.nodes, r.nodes};
      if (range) c.measured_nodes = range;
    }
    // A log's NCCL settings the model has no term for are in the fitted terms now: the file says so.
    std::set<std::string> settings;
    for (const auto& r : fit.rows)
      if (const std::string v = map.unmodelled_setting(r.environment); !v.empty()) settings.insert(v);
    std::string with;
    for (const auto& v : settings) with += (with.empty() ? "" : ", ") + v;
    sources.push_back(fmt::format("{} nccl-tests rows from {}{}", fit.rows.size(), join_choices(o->nccl_tests),
                                  with.empty() ? "" : " (runs set " + with + ": the terms hold for that setting)"));
    return finish();
  };
}

}  // namespace micsim::cli
