// micsim shapes SCENARIO [--set ...]: the GEMM shapes of one micro-step of the scenario's workload,
// as the CSV the validation harness's GEMM sweep reads (name,m,n,k,batch,count).
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "models/io/json_text.hpp"
#include "sim/simulation.hpp"
#include "validation/gemm.hpp"

namespace micsim::cli {

Runner add_shapes(CLI::App& app) {
  struct Opts {
    std::string scenario, out = "-";
    std::vector<std::string> sets;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("shapes", "Print the GEMM shapes of a scenario's layers (input of the harness's GEMM sweep)");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file")->required();
  cmd->add_option("--set", o->sets, "Override a scenario key (repeatable)");
  cmd->add_option("--out", o->out, "Write the CSV to FILE (default: stdout)");
  return [o]() -> int {
    Scenario sc = load_scenario(o->scenario, o->sets);
    OutputPlan outputs;
    for (const auto& f : sc.input_files) outputs.input(f);
    outputs.output("--out", o->out);
    PreparedSimulation p = prepare_simulation(sc);
    std::string csv = "name,m,n,k,batch,count\n";
    for (const auto& g : workload_gemms(p.workload))
      csv += fmt::format("{},{},{},{},{},{}\n", g.name, g.shape.m, g.shape.n, g.shape.k, g.shape.batch, g.count);
    write_output_file(o->out, csv);
    return 0;
  };
}

}  // namespace micsim::cli
