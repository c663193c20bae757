// Replays the fuzz corpus (fuzz/corpus/<target>/) and every past fuzz finding (fuzz/findings/<target>/)
// through the same code the libFuzzer targets run, in the ordinary build: a fixed finding stays fixed
// without needing clang. Each input must parse or be rejected with InputError, never anything else.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <map>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz/fuzz_targets.hpp"
#include "helpers.hpp"

namespace fs = std::filesystem;

namespace {

// The command-line target, replayed through the real binary in a fresh workspace (as fuzz_cli runs
// it in-process): the exit status must be 0, 2, 3 or 4.
void cli_replay(const std::string& text) {
  const fs::path dir = micsim::test::temp_dir("cli-replay");
  for (const auto& [name, content] : micsim::fuzz::cli_workspace()) std::ofstream(dir / name) << content;
  std::vector<std::string> args = micsim::fuzz::cli_arguments(text);
  std::string cmd = "cd '" + dir.string() + "' && '" + MICSIM_BINARY + "'";
  for (size_t i = 1; i < args.size(); ++i) {
    std::string q;
    for (char c : args[i]) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " '" + q + "'";
  }
  cmd += " > out.txt 2>&1";
  int st = std::system(cmd.c_str());
  fs::remove_all(dir);
  micsim::fuzz::check_cli_status(WIFEXITED(st) ? WEXITSTATUS(st) : -1, args);
}

}  // namespace

TEST_CASE("fuzz corpus and past findings: parsed or rejected with a clear error, never a crash") {
  const std::map<std::string, std::function<void(const std::string&)>> targets = {
      {"scenario", micsim::fuzz::scenario},       {"hf_config", micsim::fuzz::hf_config},
      {"deepspeed", micsim::fuzz::deepspeed},     {"nccl_tests", micsim::fuzz::nccl_tests},
      {"calibration", micsim::fuzz::calibration}, {"gemm_csv", micsim::fuzz::gemm_csv},
      {"training_csv", micsim::fuzz::training_csv}, {"cli", cli_replay}};
  size_t replayed = 0;
  for (const auto& [name, run] : targets) {
    size_t seeds = 0;
    for (const char* kind : {"corpus", "findings"}) {
      fs::path dir = fs::path(MICSIM_SOURCE_DIR) / "fuzz" / kind / name;
      if (!fs::is_directory(dir)) continue;
      for (const auto& e : fs::directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        // Raw bytes, as libFuzzer hands them over (read_whole_file would refuse non-UTF-8 before the parser).
        std::ifstream in(e.path(), std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CHECK_NOTHROW_MESSAGE(run(text), e.path().string());
        ++replayed;
        seeds += kind == std::string("corpus");
      }
    }
    CHECK_MESSAGE(seeds > 0, "no seed corpus for fuzz target " << name);
  }
  CHECK(replayed >= 30);
}
