// Every command of the README runs as written: each ```sh block is run, in order, in a scratch
// directory that links the repository's scenarios, scripts and data and the binary under test as
// build/. Only the two set-up commands (./scripts/demo and ./scripts/test: they install packages and
// build, and the second runs this suite) are left out; CI runs ./scripts/test itself.
#include <doctest/doctest.h>

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "helpers.hpp"
#include "planner/ranks.hpp"

namespace {

std::vector<std::string> readme_commands() {
  std::ifstream f(std::string(MICSIM_SOURCE_DIR) + "/README.md");
  std::vector<std::string> out;
  std::string line, cmd;
  bool in_sh = false;
  while (std::getline(f, line)) {
    if (line.rfind("```", 0) == 0) {
      in_sh = !in_sh && line == "```sh";
      continue;
    }
    if (!in_sh) continue;
    // A comment starts at " #" (no command of the README quotes a '#').
    if (auto c = line.find(" #"); c != std::string::npos) line = line.substr(0, c);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    const bool continued = !line.empty() && line.back() == '\\';
    if (continued) line.pop_back();
    cmd += line;
    if (!continued) {
      if (cmd.find_first_not_of(' ') != std::string::npos) out.push_back(cmd);
      cmd.clear();
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every command in the README runs as written") {
  if (std::system("/usr/bin/python3 -c 'import matplotlib, jsonschema, yaml, tomllib' >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: /usr/bin/python3 lacks matplotlib, jsonschema or yaml (./scripts/test installs them)");
    return;
  }
  const auto commands = readme_commands();
  REQUIRE(commands.size() >= 20);
  const std::string dir = micsim::test::temp_dir("readme");
  const std::string src = MICSIM_SOURCE_DIR, bin = MICSIM_BINARY;
  const std::string build = bin.substr(0, bin.rfind('/'));
  for (const char* d : {"scenarios", "scripts", "validation", "docs", "tests"})
    REQUIRE(::symlink((src + "/" + d).c_str(), (dir + "/" + d).c_str()) == 0);
  REQUIRE(::symlink(build.c_str(), (dir + "/build").c_str()) == 0);
  int ran = 0;
  for (const auto& cmd : commands) {
    if (cmd.rfind("./scripts/demo", 0) == 0 || cmd.rfind("./scripts/test", 0) == 0) continue;  // the set-up commands
    if (cmd.rfind("mpirun", 0) == 0) {
#ifdef MICSIM_SANITIZED
      MESSAGE("not run under sanitizers (Open MPI is not instrumented): " << cmd);
      continue;
#endif
      const std::string probe = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 1 " + bin + " --version >/dev/null 2>&1";
      if (!micsim::ranks::built_with_mpi() || micsim::test::run_shell(probe).status != 0) {
        MESSAGE("NOT RUN: micsim built without MPI, or mpirun cannot start a rank here: " << cmd);
        continue;
      }
    }
#ifdef MICSIM_SANITIZED
    if (cmd.find("--leave-one-source-out") != std::string::npos && cmd.find("--corpus") != std::string::npos) {
      MESSAGE("not run under sanitizers (a minute in Release, many under ASan): " << cmd);
      continue;
    }
#endif
    // mpirun as root (CI) must be allowed explicitly.
    auto r = micsim::test::run_shell("cd " + dir + " && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + cmd + " 2>&1");
    CHECK_MESSAGE(r.status == 0, cmd << "\n" << r.output.substr(r.output.size() > 3000 ? r.output.size() - 3000 : 0));
    ++ran;
  }
  MESSAGE(ran << " README commands run");
  CHECK(ran >= 20);
}
