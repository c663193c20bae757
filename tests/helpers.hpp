#pragma once
// Test helpers: build scenarios from YAML text, simulate them, and run the real binary.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "approx.hpp"
#include "sim/report/report.hpp"
#include "sim/simulation.hpp"

namespace micsim::test {

// A scenario in YAML with sensible defaults; `extra` are --set style overrides.
inline Scenario scenario(const std::string& instance, int nodes, const std::string& model, const std::string& kind,
                         int64_t micro_batch, int64_t global_batch, std::vector<std::string> extra = {},
                         int64_t seq_len = 512) {
  std::string yaml = "cluster: {instance: " + instance + ", nodes: " + std::to_string(nodes) + "}\n" +
                     "model: {preset: " + model + "}\n" +
                     "training: {seq_len: " + std::to_string(seq_len) + ", micro_batch: " + std::to_string(micro_batch) +
                     ", global_batch: " + std::to_string(global_batch) +
                     ", precision: fp16, activation_checkpointing: true, optimizer: adam}\n" +
                     "strategy: {kind: " + kind + "}\n";
  return parse_scenario_text(yaml, "<test>", extra);
}

inline SimulationResult run(const Scenario& sc) { return simulate_analytic(prepare_simulation(sc)); }

struct Cmd {
  int status = -1;
  std::string output;  // stdout + stderr
};

// Runs a shell command line and captures its output (stdout and stderr, as the line redirects them)
// and exit status.
inline Cmd run_shell(const std::string& command_line) {
  Cmd r;
  FILE* p = popen(command_line.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Runs build/micsim with `args` (a shell-quoted string) and captures its output and exit status
// (stdout and stderr together, or stdout only).
inline Cmd run_cli(const std::string& args, bool with_stderr = true) {
  return run_shell(std::string(MICSIM_BINARY) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

// The whole text of a file ("" if it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// This test process's private directory (mkdtemp under $TMPDIR or /tmp, mode 0700), removed when the
// process exits. Every scratch path of a test lives inside it: a predictable name directly under /tmp
// could be a link planted by someone else, and the suite runs as root.
inline const std::string& private_dir() {
  struct Dir {
    std::string path;
    pid_t owner = ::getpid();  // a forked child that exits normally must not remove its parent's files
    Dir() {
      const char* t = std::getenv("TMPDIR");
      std::string tmpl = std::string(t && *t ? t : "/tmp") + "/micsim-test-XXXXXX";
      if (!::mkdtemp(tmpl.data())) {
        std::perror("micsim tests: cannot create a private temporary directory");
        std::abort();
      }
      path = tmpl;
    }
    ~Dir() {
      std::error_code ignored;  // nothing to do about a leftover at exit
      if (::getpid() == owner) std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir;
  return dir.path;
}

// A path for a scratch file named `name` inside the private directory (nothing is created).
inline std::string temp_path(const std::string& name) { return private_dir() + "/" + name; }

// A fresh directory inside the private directory for one test's files.
inline std::string temp_dir(const std::string& tag) {
  std::string tmpl = private_dir() + "/" + tag + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) {
    std::perror("micsim tests: cannot create a temporary directory");
    std::abort();
  }
  return tmpl;
}

// Writes `text` to a scratch file named `name` in the private directory and returns its path.
inline std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) {
    std::fprintf(stderr, "micsim tests: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

inline Cmd run_cli_stdout(const std::string& args) { return run_cli(args, false); }

}  // namespace micsim::test
