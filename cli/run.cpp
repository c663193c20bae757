// The whole command line: parse, run the subcommand, map errors to exit statuses. Exit status: 0
// success, 2 bad input (the message names the file, line, key and what was expected), 3 a plan
// stopped before its end (--stop-after), 4 a plan in which nothing fits, 1 internal error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include "cli/commands.hpp"
#include "models/hardware/catalog.hpp"
#include "models/io/input_error.hpp"
#include "models/io/input_file.hpp"
#include "models/io/output_file.hpp"
#include "models/io/yaml_node.hpp"
#include "planner/ranks.hpp"

namespace micsim::cli {

int run(int argc, char** argv) {
  CLI::App app{"micsim: simulate and plan sharded data-parallel training (MiCS, ZeRO, FSDP/HSDP, DDP) on GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("micsim ") + MICSIM_VERSION);
  // User catalogs (merged over the built-in one): accepted before or after the command.
  std::vector<std::string> catalogs;
  app.add_option("--catalog", catalogs,
                 "A catalog YAML file (gpus, fabrics, instances, prices; the built-in schema) merged over the built-in "
                 "catalog (repeatable; after the files of MICSIM_CATALOG_PATH)");
  app.fallthrough();
  std::map<std::string, Runner> runners;
  runners["simulate"] = add_simulate(app);
  runners["collective"] = add_collective(app);
  runners["calibrate"] = add_calibrate(app);
  runners["validate"] = add_validate(app);
  runners["plan"] = add_plan(app);
  runners["sweep"] = add_sweep(app);
  runners["shapes"] = add_shapes(app);
  runners["catalog"] = add_catalog(app);
  install_output_cleanup();
  // Arguments become names in reports and JSON: they must be text.
  for (int i = 1; i < argc; ++i)
    if (!is_utf8(argv[i])) {
      std::cerr << "micsim: error: argument " << i << " is not UTF-8 text\n";
      return 2;
    }
  // A mistyped command gets a suggestion instead of CLI11's "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-' && !runners.count(argv[1])) {
    std::vector<std::string> names;
    for (const auto& [n, r] : runners) names.push_back(n);
    std::string hint = closest_match(argv[1], names);
    std::cerr << "micsim: error: unknown command '" << shorten_for_message(argv[1]) << "'"
              << (hint.empty() ? "" : " (did you mean '" + hint + "'?)") << "; commands: " << join_choices(names) << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    std::vector<std::string> catalog_files;
    if (const char* env = std::getenv("MICSIM_CATALOG_PATH")) catalog_files = catalog_path_files(env);
    catalog_files.insert(catalog_files.end(), catalogs.begin(), catalogs.end());
    for (const auto& f : catalog_files) add_user_catalog(f);
    int rc = 0;
    for (const auto* sub : app.get_subcommands()) rc = runners.at(sub->get_name())();
    finish_stdout();  // a full disk or closed pipe must not pass for success
    return rc;
  } catch (const InputError& e) {
    // Every rank reads the same inputs and meets the same error: rank 0 says it once.
    if (ranks::is_root()) std::cerr << "micsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // Possibly on this rank alone: the others may be waiting for it in an exchange, so all stop.
    if (ranks::size() > 1) {
      std::fprintf(stderr, "micsim: internal error on rank %d of %d: %s\n", ranks::rank(), ranks::size(), e.what());
      std::fflush(stderr);
      ranks::abort_all(1);
    }
    std::cerr << "micsim: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace micsim::cli
