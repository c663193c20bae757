#pragma once
// Subcommands of build/micsim. Each registers its options on the CLI11 app and returns the function
// that runs it. Errors in input are thrown as InputError (exit 2).
#include <CLI/CLI.hpp>
#include <functional>

namespace micsim::cli {

using Runner = std::function<int()>;
Runner add_simulate(CLI::App& app);

// Shared: write `text` to `path` atomically ("-" = stdout).
void write_output(const std::string& path, const std::string& text);

}  // namespace micsim::cli
