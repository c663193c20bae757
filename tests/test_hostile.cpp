// The hostile-input directory (tests/hostile/): every reproducer of a past failure, each with the exit
// status and message it must give. See tests/hostile/README.md for the format. Each case runs in a
// fresh copy of its directory under /tmp, so nothing is ever written outside it.
#include <doctest/doctest.h>

#include "helpers.hpp"
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Expectation {
  int exit_status = 0;
  std::vector<std::string> contains, lacks;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

Expectation read_expectation(const fs::path& file) {
  Expectation e;
  std::istringstream in(slurp(file));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("exit ", 0) == 0) e.exit_status = std::stoi(line.substr(5));
    else if (line.rfind("contains ", 0) == 0) e.contains.push_back(line.substr(9));
    else if (line.rfind("lacks ", 0) == 0) e.lacks.push_back(line.substr(6));
  }
  return e;
}

using Run = micsim::test::Cmd;

// Runs `script` with sh in `dir`, stdout and stderr together; $MICSIM is the binary.
Run shell(const fs::path& dir, const std::string& script, const std::string& prefix = "") {
  const fs::path file = dir / ".run.sh";
  // Each case gets its own TMPDIR, so what it finds there (an engine's leftovers) is its own, not
  // that of a test running beside it.
  std::ofstream(file) << "cd '" << dir.string() << "' || exit 99\nmkdir -p .tmp && TMPDIR=\"$PWD/.tmp\" && export TMPDIR\n"
                      << "MICSIM='" << MICSIM_BINARY << "'\nexport MICSIM\n"
                      << "MICSIM_SOURCE='" << MICSIM_SOURCE_DIR << "'\n" << prefix << script << "\n";
  return micsim::test::run_shell("sh '" + file.string() + "' 2>&1");
}

fs::path fresh_copy(const fs::path& src, const std::string& tag) {
  const fs::path dst = fs::path(micsim::test::temp_dir("hostile-" + tag)) / src.filename();
  fs::copy(src, dst, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  return dst;
}

std::vector<fs::path> cases() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(MICSIM_SOURCE_DIR) / "tests" / "hostile"))
    if (e.is_directory()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Prepares a case directory (its `setup` script), runs its `cmd`, and returns the run.
Run run_case(const fs::path& dir, const std::string& prefix = "") {
  if (fs::exists(dir / "setup")) {
    Run s = shell(dir, slurp(dir / "setup"));
    if (s.status != 0) return {98, "setup failed: " + s.output};
  }
  return shell(dir, trim(slurp(dir / "cmd")), prefix);
}

}  // namespace

TEST_CASE("hostile inputs: each reproducer gives its exit status and message, and its check holds") {
  size_t n = 0;
  for (const auto& c : cases()) {
    CAPTURE(c.filename().string());
    const fs::path dir = fresh_copy(c, "run");
    const Expectation e = read_expectation(dir / "expect");
    const Run r = run_case(dir);
    CAPTURE(r.output);
    CHECK(r.status == e.exit_status);
    for (const auto& s : e.contains) CHECK_MESSAGE(r.output.find(s) != std::string::npos, "expected in the output: " << s);
    for (const auto& s : e.lacks) CHECK_MESSAGE(r.output.find(s) == std::string::npos, "not expected in the output: " << s);
    if (fs::exists(dir / "check")) {
      std::ofstream(dir / ".output", std::ios::binary) << r.output;
      Run chk = shell(dir, slurp(dir / "check"));
      CHECK_MESSAGE(chk.status == 0, "check failed: " << chk.output);
    }
    fs::remove_all(dir);
    ++n;
  }
  CHECK(n >= 40);
}

#ifndef MICSIM_SANITIZED
// Under a 4 GB address-space limit no hostile input ends in anything but success or a clear input
// error: limits are checked before allocation, never discovered by bad_alloc. (Not under ASan, whose
// shadow memory alone reserves more than that.)
TEST_CASE("hostile inputs under ulimit -v 4000000: exit 0 or 2, never an internal error or a crash") {
  for (const auto& c : cases()) {
    CAPTURE(c.filename().string());
    const fs::path dir = fresh_copy(c, "ulimit");
    const Run r = run_case(dir, "ulimit -v 4000000 || exit 97\n");
    CAPTURE(r.output);
    CHECK((r.status == 0 || r.status == 2));
    CHECK(r.output.find("internal error") == std::string::npos);
    fs::remove_all(dir);
  }
}
#endif
