// micsim simulate SCENARIO [--engine analytic|simgrid] [--set key=value]... [--json FILE] [--trace FILE]
#include <algorithm>
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "models/io/input_file.hpp"
#include "models/io/output_file.hpp"
#include "cli/commands.hpp"
#include "models/io/json_text.hpp"
#include "planner/handoff/handoff.hpp"
#include "models/hardware/topology.hpp"
#include "sim/costs/uplink_sharing.hpp"
#include "sim/des/simulate_simgrid.hpp"
#include "sim/report/report.hpp"
#include "sim/report/trace.hpp"
#include "sim/simulation.hpp"

namespace micsim::cli {


Runner add_simulate(CLI::App& app) {
  struct Opts {
    std::string scenario, engine, json, trace, deepspeed, handoff_dir, topology;
    int trace_micro_steps = 64;
    std::vector<std::string> sets;
    bool quiet = false, no_symmetry = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training step of a scenario");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file")->required();
  cmd->add_option("--engine", o->engine, "analytic (default) or simgrid; overrides the scenario's engine:")
      ->check(CLI::IsMember({"analytic", "simgrid"}));
  cmd->add_option("--set", o->sets, "Override a scenario key: --set cluster.nodes=16 (repeatable)");
  cmd->add_option("--json", o->json, "Write the result as JSON to FILE ('-' for stdout)");
  cmd->add_option("--trace", o->trace, "Write a Chrome/Perfetto trace of the step to FILE");
  cmd->add_option("--trace-micro-steps", o->trace_micro_steps,
                  "Draw at most N micro-steps in the trace (default 64; the others, identical, are marked as elided)")
      ->check(CLI::Range(4, 1 << 16));
  cmd->add_option("--deepspeed", o->deepspeed, "Simulate what an existing ds_config.json describes (overrides the scenario)");
  cmd->add_option("--topology", o->topology, "Write the cluster's topology graph (GPUs, NVSwitch, PCIe, NICs, leaves, spine) as Graphviz DOT to FILE");
  cmd->add_option("--handoff-dir", o->handoff_dir,
                  "Write hand-offs for this configuration into DIR: ds_config.json, train_fsdp2.py, torchtitan.toml, accelerate.yaml, HANDOFF.md");
  cmd->add_flag("--every-node", o->no_symmetry,
                "SimGrid engine: simulate every node even where the cluster is symmetric (by default a symmetric cluster runs as one block of nodes, docs/model.md)");
  cmd->add_flag("--quiet,-q", o->quiet, "Do not print the summary");
  return [cmd, o]() -> int {
    (void)cmd;
    Scenario sc = load_scenario(o->scenario, o->sets);
    if (!o->deepspeed.empty()) {
      auto ds = read_deepspeed_config(o->deepspeed, sc.world_size());
      sc = load_scenario(o->scenario, o->sets, ds.overrides);
      if (!ds.ignored.empty()) {
        std::string keys;
        for (const auto& k : ds.ignored) keys += (keys.empty() ? "" : ", ") + k;
        std::cerr << "micsim: warning: " << o->deepspeed << ": keys micsim does not model: " << keys << "\n";
      }
    }
    // Every output is checked before the work starts: nothing is simulated for a run that cannot
    // write its results, and no output may overwrite an input.
    OutputPlan outputs;
    for (const auto& f : sc.input_files) outputs.input(f);
    outputs.input(o->deepspeed);
    outputs.output("--json", o->json);
    outputs.output("--trace", o->trace);
    outputs.output("--topology", o->topology);
    const auto handoff_paths = handoff_outputs(outputs, o->handoff_dir);
    for (const auto& w : sc.warnings) std::cerr << "micsim: warning: " << w << "\n";
    EngineKind engine = sc.engine;
    if (!o->engine.empty()) engine = o->engine == "analytic" ? EngineKind::Analytic : EngineKind::SimGrid;
    if (engine == EngineKind::Analytic && !sc.what_if.empty())
      std::cerr << "micsim: warning: what_if (slow nodes, degraded links, jitter seed) needs --engine simgrid; the analytic engine ignores it\n";
    // A trace draws every micro-step (up to --trace-micro-steps); otherwise identical middle
    // micro-steps are extrapolated (same step time, less work).
    PrepareOptions popt;
    if (!o->trace.empty()) popt.max_built_micro_steps = sc.grad_accumulation_steps() <= o->trace_micro_steps ? 0 : o->trace_micro_steps;
    PreparedSimulation prep = prepare_simulation(sc, popt);
    SimulationResult r;
    std::string trace;
    if (engine == EngineKind::Analytic) {
      r = simulate_analytic(prep);
      if (!o->trace.empty()) trace = chrome_trace(prep, {{0, &r.timeline}}, "analytic");
    } else {
      des::DesOutcome details;
      const PreparedSimulation* simulated = &prep;
      r = simulate_simgrid(prep, {!o->trace.empty(), !o->no_symmetry}, &details, &simulated);
      if (!o->trace.empty()) {
        std::vector<TracedNode> nodes;
        for (size_t n = 0; n < details.nodes.size(); ++n) nodes.push_back({int(n), &details.nodes[n]});
        trace = chrome_trace(*simulated, nodes, "simgrid");
      }
      const std::string simulated_nodes = details.simulated_nodes < sc.cluster.nodes
          ? fmt::format(" ({} simulated: the cluster repeats every {} nodes)", details.simulated_nodes, details.simulated_nodes)
          : std::string();
      r.sources.push_back(fmt::format("simgrid engine: {} nodes{}, {} flows, {} events, {:.2f} s wall, {} MiB peak memory; critical node {}",
                                      sc.cluster.nodes, simulated_nodes, details.flows, details.events, details.wall_s,
                                      details.peak_rss_kib / 1024, details.critical_node));
    }
    // What the run itself found (e.g. a cluster larger than its fabric's measurements): after the scenario's own.
    for (const auto& w : r.warnings)
      if (std::find(sc.warnings.begin(), sc.warnings.end(), w) == sc.warnings.end()) std::cerr << "micsim: warning: " << w << "\n";
    if (!o->trace.empty()) write_output_file(o->trace, trace);
    if (!o->json.empty()) write_output_file(o->json, json_text(versioned(to_json(r), "simulate")));
    write_handoffs(handoff_paths, all_handoffs(sc, r));
    if (!o->topology.empty())
      write_output_file(o->topology, topology_dot(build_topology(sc.cluster.instance, sc.cluster.nodes, fabric_layout(sc.cluster),
                                                                 sc.what_if.degraded)));
    if (!o->quiet && o->json != "-" && o->trace != "-" && o->topology != "-") write_stdout(format_summary(r));
    return 0;
  };
}

}  // namespace micsim::cli
