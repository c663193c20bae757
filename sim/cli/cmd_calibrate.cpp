// micsim calibrate --nccl-tests FILE... --instance NAME --out calibration.yaml
// Fits the network terms (per-fabric latency, bandwidth efficiency; NVLink efficiency and latency on
// single-node rows) to measured nccl-tests results, prints per-row residuals and writes a
// calibration file that scenarios load with `calibration:`.
#include <fmt/format.h>

#include <iostream>

#include "models/hardware/catalog.hpp"
#include "sim/cli/commands.hpp"
#include "sim/report/report.hpp"
#include "validation/collective_validation.hpp"

namespace micsim::cli {

Runner add_calibrate(CLI::App& app) {
  struct Opts {
    std::vector<std::string> nccl_tests;
    std::string instance, out, op;
    int ranks = 0, nodes = 0;
    bool two_node_ar = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit a calibration file to measurements");
  cmd->add_option("--nccl-tests", o->nccl_tests, "nccl-tests output (text log or published CSV rows); repeatable")->required();
  cmd->add_option("--instance", o->instance, "Catalog instance the measurements were taken on")->required();
  cmd->add_option("--out", o->out, "Calibration file to write (YAML)")->required();
  cmd->add_option("--op", o->op, "Collective of a log that does not name it (all_reduce, all_gather, ...)");
  cmd->add_option("--ranks", o->ranks, "Ranks of a log without '# Rank' lines");
  cmd->add_option("--nodes", o->nodes, "Nodes of a log without '# Rank ... on HOST' lines");
  cmd->add_flag("--include-two-node-allreduce", o->two_node_ar,
                "Also fit 2-node all_reduce rows (NCCL runs tree there; excluded by default)");
  return [o]() -> int {
    const InstanceSpec& inst = lookup_instance("--instance", o->instance);
    std::vector<NcclTestRow> rows;
    NcclTestsOptions lopt{o->op, o->ranks, o->nodes};
    ClusterMap map = ClusterMap::builtin();
    // Published CSVs mix clusters: keep the rows of this instance. Files that name no known cluster
    // (a user's own logs or CSVs) are taken whole.
    std::vector<NcclTestRow> loaded;
    bool any_mapped = false;
    for (const auto& f : o->nccl_tests) {
      auto r = load_nccl_tests(f, lopt);
      for (const auto& x : r) any_mapped |= !x.cluster.empty() && map.instance_for(x.cluster).has_value();
      loaded.insert(loaded.end(), r.begin(), r.end());
    }
    for (const auto& x : loaded)
      if (!any_mapped || map.instance_for(x.cluster) == inst.name) rows.push_back(x);
    FitOptions fo;
    fo.include_two_node_allreduce = o->two_node_ar;
    NetworkFit fit = fit_network(inst, rows, fo);
    if (fit.rows.empty() || fit.fitted.empty())
      throw InputError({o->nccl_tests.front(), 0, 0}, "",
                       "no rows to fit for " + inst.name +
                           ": need single-node rows, all_gather/reduce_scatter rows, or all_reduce rows of 4+ nodes "
                           "(--include-two-node-allreduce adds 2-node all_reduce rows)");
    std::cout << fmt::format("calibrating {} on {} rows ({} iterations); fitted: {}\n\n", inst.name, fit.rows.size(),
                             fit.iterations, join_choices(fit.fitted));
    std::cout << fmt::format("{:<15}{:>6}{:>6}{:>13}{:>13}{:>13}{:>13}  {}\n", "op", "ranks", "nodes", "bytes",
                             "measured", "error before", "error after", "file:line");
    for (size_t i = 0; i < fit.rows.size(); ++i) {
      const auto& r = fit.rows[i];
      std::cout << fmt::format("{:<15}{:>6}{:>6}{:>13.0f}{:>13}{:>12.1f}%{:>12.1f}%  {}:{}\n", r.op_name, r.ranks, r.nodes,
                               r.bytes, human_seconds(*r.time_or_derived()), 100 * fit.before[i], 100 * fit.after[i],
                               r.file, r.line);
    }
    auto sb = summarize_errors(fit.before), sa = summarize_errors(fit.after);
    std::cout << fmt::format("\nmedian |error| {:.1f}% -> {:.1f}%, p90 {:.1f}% -> {:.1f}%\n", 100 * sb.median_abs,
                             100 * sa.median_abs, 100 * sb.p90_abs, 100 * sa.p90_abs);
    Calibration c = fit.calibration;
    c.source = fmt::format("micsim calibrate on {} nccl-tests rows from {}", fit.rows.size(), join_choices(o->nccl_tests));
    write_output(o->out, c.to_yaml());
    std::cout << "wrote " << o->out << "\n";
    return 0;
  };
}

}  // namespace micsim::cli
