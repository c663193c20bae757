#pragma once
// Subcommands of build/micsim. Each registers its options on the CLI11 app and returns the function
// that runs it. Errors in input are thrown as InputError (exit 2).
#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/io/output_file.hpp"

namespace micsim {
struct InstanceSpec;
struct HandoffFile;
}
namespace micsim::cli {

// Runs micsim with these arguments (argv[0] is the program name) and returns the exit status.
int run(int argc, char** argv);

using Runner = std::function<int()>;
Runner add_simulate(CLI::App& app);
Runner add_collective(CLI::App& app);
Runner add_calibrate(CLI::App& app);
Runner add_validate(CLI::App& app);
Runner add_plan(CLI::App& app);
Runner add_sweep(CLI::App& app);
Runner add_shapes(CLI::App& app);
Runner add_catalog(CLI::App& app);

// Shared option parsing.
double parse_size(const std::string& flag, const std::string& s);  // 8, 64K, 1M, 8G
const InstanceSpec& lookup_instance(const std::string& flag, const std::string& name);

// Hand-off files in a directory (cli/handoff_files.cpp): paths checked with the run's outputs, then written.
std::map<std::string, std::string> handoff_outputs(OutputPlan& outputs, const std::string& dir);
void write_handoffs(const std::map<std::string, std::string>& paths, const std::vector<HandoffFile>& files);

}  // namespace micsim::cli
