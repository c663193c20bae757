// build/micsim: the command-line entry point. Exit status: 0 success, 2 bad input (the message names
// the file, line, key and what was expected), 1 internal error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "models/io/input_error.hpp"
#include "sim/cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"micsim: simulate and plan sharded data-parallel training (MiCS, ZeRO, FSDP/HSDP, DDP) on GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "micsim 0.1.0");
  std::map<std::string, micsim::cli::Runner> runners;
  runners["simulate"] = micsim::cli::add_simulate(app);
  runners["collective"] = micsim::cli::add_collective(app);
  runners["calibrate"] = micsim::cli::add_calibrate(app);
  runners["validate"] = micsim::cli::add_validate(app);
  runners["plan"] = micsim::cli::add_plan(app);
  runners["sweep"] = micsim::cli::add_sweep(app);
  runners["shapes"] = micsim::cli::add_shapes(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (const auto* sub : app.get_subcommands()) return runners.at(sub->get_name())();
  } catch (const micsim::InputError& e) {
    std::cerr << "micsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "micsim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
