// Hand-offs people run: for each strategy, the DeepSpeed config, the FSDP2 script, the torchtitan TOML
// and the accelerate config encode the simulated groups and batch, and pass scripts/check-handoff
// (the APIs at PyTorch 2.6, torchtitan v0.2.2, accelerate 1.14.0, DeepSpeed 0.19.5, read from their
// sources). The FSDP2 script runs 2 steps on CPU with gloo where an installed PyTorch >= 2.6 allows.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.hpp"

using micsim::test::run_cli;

namespace {

bool have_python_deps() {
  return std::system("/usr/bin/python3 -c 'import jsonschema, yaml, tomllib' >/dev/null 2>&1") == 0;
}

micsim::test::Cmd check(const std::string& dir, int world, bool run_tiny) {
  return micsim::test::run_shell(std::string("/usr/bin/python3 ") + MICSIM_SOURCE_DIR + "/scripts/check-handoff " + dir + " --world " +
                                 std::to_string(world) + (run_tiny ? " --run-tiny" : "") + " 2>&1");
}

using micsim::test::read_text;

const std::string kLlama = std::string(MICSIM_SOURCE_DIR) + "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml";

}  // namespace

TEST_CASE("hand-offs encode the simulated strategy and pass the API checks of the versions they target") {
  if (!have_python_deps()) {
    MESSAGE("skipped: /usr/bin/python3 lacks jsonschema, yaml or tomllib (./scripts/test installs python3-jsonschema, python3-yaml)");
    return;
  }
  struct Case {
    std::vector<std::string> sets;
    int world;
    bool deepspeed;
    int replicate, shard;
  };
  const std::string llama = "--set model.preset=llama3-8b --set training.seq_len=2048 --set training.precision=bf16 "
                            "--set cluster.instance=p4d.24xlarge --set cluster.nodes=4 --set training.global_batch=256 --set training.micro_batch=2 ";
  const std::vector<Case> cases = {
      {{"--set strategy.kind=mics --set strategy.partition_size=16"}, 32, true, 2, 16},
      {{"--set strategy.kind=hsdp --set strategy.partition_size=8 --set training.optimizer_implementation=foreach"}, 32, false, 4, 8},
      {{"--set strategy.kind=zero3"}, 32, true, 1, 32},
      {{"--set strategy.kind=zero2"}, 32, true, 1, 32},
      {{"--set strategy.kind=ddp --set model.preset=llama2-7b --set cluster.instance=p4de.24xlarge"}, 32, true, 32, 1},
  };
  bool tiny_done = false;
  for (const auto& c : cases) {
    const std::string dir = micsim::test::temp_dir("handoff");
    REQUIRE(!dir.empty());
    auto r = run_cli("simulate " + kLlama + " " + llama + c.sets.front() + " -q --handoff-dir " + dir);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    auto v = check(dir, c.world, !tiny_done);
    tiny_done = true;
    CHECK_MESSAGE(v.status == 0, c.sets.front() << ":\n" << v.output);
    if (v.output.find("SKIP") != std::string::npos) MESSAGE(v.output);
    // The groups of the simulation, in every file.
    const std::string py = read_text(dir + "/train_fsdp2.py");
    CHECK(py.find("\"replicate\": " + std::to_string(c.replicate) + ",") != std::string::npos);
    CHECK(py.find("\"shard\": " + std::to_string(c.shard) + ",") != std::string::npos);
    const std::string toml = read_text(dir + "/torchtitan.toml");
    CHECK(toml.find("data_parallel_replicate_degree = " + std::to_string(c.replicate)) != std::string::npos);
    CHECK(toml.find("data_parallel_shard_degree = " + std::to_string(c.shard)) != std::string::npos);
    // The optimizer update simulated (fused unless the scenario says foreach), in both PyTorch hand-offs.
    const std::string impl = c.sets.front().find("foreach") != std::string::npos ? "foreach" : "fused";
    CHECK(toml.find("[optimizer]\nimplementation = \"" + impl + "\"") != std::string::npos);
    CHECK(py.find("\"optimizer_implementation\": \"" + impl + "\"") != std::string::npos);
    std::ifstream ds(dir + "/ds_config.json");
    CHECK(bool(ds) == c.deepspeed);
    const std::string md = read_text(dir + "/HANDOFF.md");
    CHECK(md.find("tokens/s") != std::string::npos);
    if (c.sets.front().find("mics") != std::string::npos) {
      auto j = nlohmann::json::parse(read_text(dir + "/ds_config.json"));
      CHECK(j["zero_optimization"]["mics_shard_size"] == 16);
      CHECK(j["zero_optimization"]["mics_hierarchical_params_gather"] == true);
      CHECK(j["train_batch_size"] == 256);
      CHECK(md.find("MiCS_Init") != std::string::npos);
      CHECK(py.find("\"defer_all_reduce\": True") != std::string::npos);
      // The check can fail: a parameter fully_shard does not have, a key torchtitan does not read.
      std::ofstream(dir + "/train_fsdp2.py", std::ios::app) << "\nfully_shard(None, prefetch=2)\n";
      std::ofstream(dir + "/torchtitan.toml", std::ios::app) << "\n[training.extra]\nfoo = 1\n";
      auto bad = check(dir, c.world, false);
      CHECK(bad.status == 1);
      CHECK(bad.output.find("has no parameter 'prefetch'") != std::string::npos);
    }
    if (c.sets.front().find("hsdp") != std::string::npos) CHECK(md.find("no DeepSpeed equivalent") != std::string::npos);
  }
}
