// micsim sweep SCENARIO --vary KEY=V1,V2,... [--vary ...] [--weak|--strong] [--engine E] [--csv F] [--json F]
#include <fmt/format.h>

#include <iostream>

#include "planner/sweep.hpp"
#include "cli/commands.hpp"
#include "models/io/json_text.hpp"

namespace micsim::cli {

Runner add_sweep(CLI::App& app) {
  struct Opts {
    std::string scenario, csv, json, engine = "analytic";
    std::vector<std::string> vary, sets;
    bool weak = false, strong = false, quiet = false;
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("sweep", "Evaluate the Cartesian product of scenario keys (scaling studies)");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file")->required();
  cmd->add_option("--vary", o->vary, "key.path=v1,v2,... (repeatable)")->required();
  cmd->add_option("--set", o->sets, "Override a scenario key (repeatable)");
  cmd->add_flag("--weak", o->weak, "Weak scaling: per-GPU batch and accumulation fixed, global batch grows");
  cmd->add_flag("--strong", o->strong, "Strong scaling: global batch fixed");
  cmd->add_option("--engine", o->engine, "analytic (default) or simgrid")->check(CLI::IsMember({"analytic", "simgrid"}));
  cmd->add_option("--threads", o->threads, "Worker threads (default: every core)")->check(CLI::Range(0, 1024));
  cmd->add_option("--csv", o->csv, "Write the rows as CSV to FILE");
  cmd->add_option("--json", o->json, "Write the rows as JSON to FILE ('-' = stdout)");
  cmd->add_flag("--quiet,-q", o->quiet, "Do not print the table");
  return [o]() -> int {
    if (o->weak && o->strong) throw InputError({"--weak --strong", 0, 0}, "", "choose weak or strong scaling, not both");
    SweepSpec spec;
    for (const auto& v : o->vary) spec.vary.push_back(parse_vary(v));
    // The number of combinations, checked before anything is allocated (and before it can overflow).
    constexpr size_t kMaxCombinations = 100000;
    size_t combos = 1;
    for (const auto& [k, v] : spec.vary) {
      if (v.size() > kMaxCombinations / combos)
        throw InputError({"--vary", 0, 0}, "", fmt::format("more than {} combinations of the --vary values; the limit is {} (vary fewer keys or values)", kMaxCombinations, kMaxCombinations));
      combos *= v.size();
    }
    spec.mode = o->weak ? ScalingMode::Weak : o->strong ? ScalingMode::Strong : ScalingMode::AsGiven;
    spec.engine = o->engine == "simgrid" ? EngineKind::SimGrid : EngineKind::Analytic;
    spec.threads = o->threads;
    // A --vary key the scenario schema does not know is a typo, not a configuration to report per row.
    for (const auto& [key, values] : spec.vary) {
      std::vector<std::string> sets = o->sets;
      sets.push_back(key + "=" + values.front());
      try {
        load_scenario(o->scenario, sets);
      } catch (const UnknownKeyError& e) {
        throw InputError({"--vary " + key, 0, 0}, e.key(), e.detail());
      } catch (const InputError&) {
        // A known key with a value this scenario refuses: reported on its row.
      }
    }
    {
      OutputPlan outputs;
      outputs.input(o->scenario);
      for (const auto& f : load_scenario(o->scenario, o->sets).input_files) outputs.input(f);
      outputs.output("--csv", o->csv);
      outputs.output("--json", o->json);
    }
    SweepResult r = run_sweep(o->scenario, o->sets, spec);
    std::cerr << fmt::format("micsim sweep: {} configurations in {:.2f} s\n", r.rows.size(), r.wall_s);
    if (!o->csv.empty()) write_output_file(o->csv, sweep_csv(r));
    if (!o->json.empty()) write_output_file(o->json, json_text(versioned(sweep_json(r), "sweep")));
    if (!o->quiet && o->json != "-" && o->csv != "-") write_stdout(format_sweep(r));
    return 0;
  };
}

}  // namespace micsim::cli
