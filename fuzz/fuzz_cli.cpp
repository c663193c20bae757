// libFuzzer entry point for the command line (fuzz::cli_arguments): runs micsim in-process in a private
// working directory under $TMPDIR that holds the files of fuzz::cli_workspace, with its output going to
// files there. Exit status 1 (internal error) or a crash is a finding.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "cli/commands.hpp"
#include "fuzz/fuzz_targets.hpp"

namespace {

void enter_workspace() {
  static bool done = false;
  if (done) return;
  done = true;
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/micsim-fuzz-cli-XXXXXX";
  if (!mkdtemp(dir.data()) || chdir(dir.c_str()) != 0) abort();
  for (const auto& [name, text] : micsim::fuzz::cli_workspace()) std::ofstream(name) << text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  enter_workspace();
  std::vector<std::string> args = micsim::fuzz::cli_arguments(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (!freopen("stdout.txt", "w", stdout) || !freopen("stderr.txt", "w", stderr)) abort();
  int status = micsim::cli::run(int(args.size()), argv.data());
  micsim::fuzz::check_cli_status(status, args);
  return 0;
}
