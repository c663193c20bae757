// Replays the fuzz corpus (fuzz/corpus/<target>/) and every past fuzz finding (fuzz/findings/<target>/)
// through the same code the libFuzzer targets run, in the ordinary build: a fixed finding stays fixed
// without needing clang. Each input must parse or be rejected with InputError, never anything else.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <map>

#include "fuzz/fuzz_targets.hpp"

namespace fs = std::filesystem;

TEST_CASE("fuzz corpus and past findings: parsed or rejected with a clear error, never a crash") {
  const std::map<std::string, std::function<void(const std::string&)>> targets = {
      {"scenario", micsim::fuzz::scenario},       {"hf_config", micsim::fuzz::hf_config},
      {"deepspeed", micsim::fuzz::deepspeed},     {"nccl_tests", micsim::fuzz::nccl_tests},
      {"calibration", micsim::fuzz::calibration}, {"gemm_csv", micsim::fuzz::gemm_csv}};
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
