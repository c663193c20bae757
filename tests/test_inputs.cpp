// Hugging Face configs, overrides, warnings, and bad input: exit status 2 and one message naming
// the file, line, key and what was expected.
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "models/io/input_file.hpp"
#include "models/workload/model_spec.hpp"

using namespace micsim;
using micsim::test::run_cli;
using micsim::test::temp_file;

TEST_CASE("an HF Llama config gives the same model as the preset") {
  std::string cfg = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
  "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 32, "vocab_size": 32000, "tie_word_embeddings": false, "rms_norm_eps": 1e-05
})";
  ModelSpec m = parse_hf_config(cfg, "config.json");
  CHECK(count_params(m).total == count_params(*find_model_preset("llama2-7b")).total);
  std::string gpt2 = R"({"model_type": "gpt2", "n_embd": 1600, "n_layer": 48, "n_head": 25, "vocab_size": 50257, "n_positions": 1024})";
  CHECK(count_params(parse_hf_config(gpt2, "gpt2-xl.json")).total == 1557611200);  // GPT-2 XL, 1.56 B
}

TEST_CASE("malformed HF configs name the file, line and key") {
  try {
    parse_hf_config("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,,\n}", "bad.json");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.where().file == "bad.json");
    CHECK(e.where().line == 3);
  }
  try {
    parse_hf_config("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": \"big\"\n}", "bad.json");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.key() == "hidden_size");
    CHECK(e.where().line == 3);
    CHECK(std::string(e.what()).find("integer") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_hf_config(R"({"model_type": "t5"})", "t5.json"), InputError);
}

static const char* kGood = R"(name: t
cluster:
  instance: p4d.24xlarge
  nodes: 4
model:
  preset: bert-10b
training:
  seq_len: 512
  micro_batch: 8
  global_batch: 256
  precision: fp16
  activation_checkpointing: true
  optimizer: adam
strategy:
  kind: mics
  partition_size: 8
)";

struct BadCase {
  const char* what;
  std::string yaml;
  std::string args;
  std::vector<std::string> expect;  // substrings of the message
};

TEST_CASE("bad input: exit status 2 with file, line, key and expectation") {
  std::string good(kGood);
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  std::vector<BadCase> cases = {
      {"unknown key with hint", replace("  micro_batch: 8", "  micro_bacth: 8"), "",
       {":9:3:", "training.micro_bacth", "unknown key", "did you mean 'micro_batch'"}},
      {"wrong type", replace("nodes: 4", "nodes: four"), "", {":4:10:", "cluster.nodes", "expected an integer"}},
      {"negative size", replace("nodes: 4", "nodes: -2"), "", {":4:10:", "cluster.nodes", "[1, "}},
      {"zero size", replace("seq_len: 512", "seq_len: 0"), "", {":8:12:", "training.seq_len"}},
      {"partition size does not divide", replace("partition_size: 8", "partition_size: 12"), "",
       {":16:19:", "strategy.partition_size", "divisor of the world size 32"}},
      {"batch does not divide", replace("global_batch: 256", "global_batch: 1000"), "",
       {":10:17:", "training.global_batch", "multiple of micro_batch x data-parallel size = 8 x 32 = 256"}},
      {"unknown instance", replace("instance: p4d.24xlarge", "instance: p4d.24xlarg"), "",
       {":3:13:", "cluster.instance", "unknown instance", "did you mean 'p4d.24xlarge'"}},
      {"unknown preset", replace("preset: bert-10b", "preset: bert-11b"), "", {":6:11:", "model.preset", "unknown model preset"}},
      {"unsupported precision", replace("precision: fp16", "precision: bf16"), " --set cluster.instance=p3dn.24xlarge",
       {"training.precision", "bf16 is not supported by V100"}},
      {"invalid YAML", replace("  nodes: 4", "  nodes: [4"), "", {"invalid YAML"}},
      {"bad override", good, " --set cluster.nodes=abc", {"--set cluster.nodes=abc", "cluster.nodes", "expected an integer"}},
      {"override of a scalar as a mapping", good, " --set cluster.nodes.x=1", {"--set cluster.nodes.x=1", "single value"}},
      {"unknown strategy", replace("kind: mics", "kind: zeor3"), "", {"strategy.kind", "expected one of", "did you mean 'zero3'"}},
      {"missing key", replace("  seq_len: 512\n", ""), "", {"training.seq_len", "required key is missing"}},
      {"unknown cross-entropy", good, " --set training.cross_entropy=chunked", {"training.cross_entropy", "fused", "torch"}},
      {"unknown NCCL chooser", good, " --set cluster.nccl_choice=best", {"cluster.nccl_choice", "nccl", "fastest"}},
      {"unknown CPU vendor", good,
       " --set 'cluster.instance={gpu: A100-SXM4-40GB, gpus_per_node: 8, cpu: arm, intra_node: {gbytes_per_s: 240}, network: {nics: 4, gbits_per_nic: 100, fabric: efa-p4}}'",
       {"cpu", "intel", "amd"}},
      {"foreach lamb", good, " --set training.optimizer=lamb --set training.optimizer_implementation=foreach",
       {"training.optimizer_implementation", "foreach is modelled for adam"}},
  };
  for (const auto& c : cases) {
    std::string path = temp_file("bad.yaml", c.yaml);
    auto r = run_cli("simulate " + path + c.args + " -q");
    CHECK_MESSAGE(r.status == 2, c.what << ": " << r.output);
    for (const auto& e : c.expect) CHECK_MESSAGE(r.output.find(e) != std::string::npos, c.what << ": wanted '" << e << "' in: " << r.output);
    CHECK_MESSAGE(r.output.find("internal error") == std::string::npos, c.what);
    const bool located = r.output.find("micsim: error: " + path) != std::string::npos ||
                         r.output.find("micsim: error: --set") != std::string::npos;
    CHECK_MESSAGE(located, c.what << ": " << r.output);
  }
  auto missing = run_cli("simulate /nonexistent/scenario.yaml");
  CHECK(missing.status == 2);
  CHECK(missing.output.find("/nonexistent/scenario.yaml: cannot open file") != std::string::npos);
  CHECK(run_cli("simulate").status == 2);
  CHECK(run_cli("frobnicate").status == 2);
  // Not a regular file: refused at once instead of reading /dev/zero forever or blocking on a pipe.
  auto device = run_cli("simulate /dev/zero");
  CHECK(device.status == 2);
  CHECK(device.output.find("expected a regular file") != std::string::npos);
  CHECK(run_cli("simulate /tmp").status == 2);
  // A calibration file would not apply to the published-run datasets: refused, not silently ignored.
  auto cal = run_cli("validate --megatron " + std::string(MICSIM_SOURCE_DIR) + "/validation/data/megatron --calibration " +
                     temp_file("cal.yaml", "instance: p4d.24xlarge\n"));
  CHECK(cal.status == 2);
  CHECK(cal.output.find("--calibration") != std::string::npos);
  // Command-line numbers are range-checked too, and the message gives the range.
  const std::string scenario = temp_file("good.yaml", kGood);
  const std::string checkpoint = " --checkpoint " + micsim::test::temp_path("refused-ck");
  for (const std::string& bad : std::vector<std::string>{" --threads -3", " --refine -1", " --top 0", " --target-tokens -1", " --stop-after -2" + checkpoint}) {
    auto r = run_cli("plan " + scenario + bad + " -q");
    CHECK_MESSAGE(r.status == 2, bad << ": " << r.output);
    CHECK_MESSAGE(r.output.find("range") != std::string::npos, bad << ": " << r.output);
  }
}

TEST_CASE("impossible configurations are explained, with the number that would fit") {
  // GPT-175B on one p3dn node: even ZeRO-3 over all 8 GPUs is far short.
  std::string path = temp_file("too-big.yaml", R"(cluster: {instance: p3dn.24xlarge, nodes: 1}
model: {preset: gpt-175b}
training: {seq_len: 2048, micro_batch: 1, global_batch: 8, activation_checkpointing: true}
strategy: {kind: zero3}
)");
  auto sim = run_cli("simulate " + path);
  CHECK(sim.status == 0);
  CHECK(sim.output.find("DOES NOT FIT") != std::string::npos);
  CHECK(sim.output.find("even fully sharded over all 8 GPUs") != std::string::npos);
  auto plan = run_cli("plan " + path + " --refine 0");
  CHECK(plan.status == 4);  // documented: the search ran and nothing fits
  CHECK(plan.output.find("No configuration fits in GPU memory. Closest:") != std::string::npos);
  CHECK(plan.output.find("that is at least") != std::string::npos);
  // Activations alone too large: no amount of sharding helps, and the message says which knobs do.
  std::string act = temp_file("act.yaml", R"(cluster: {instance: p3dn.24xlarge, nodes: 2}
model: {preset: bert-10b}
training: {seq_len: 512, micro_batch: 64, global_batch: 1024, activation_checkpointing: false}
strategy: {kind: zero3}
)");
  auto a = run_cli("simulate " + act);
  CHECK(a.output.find("alone exceeds") != std::string::npos);
  CHECK(a.output.find("activation_checkpointing") != std::string::npos);
}

TEST_CASE("keys that do not apply to the strategy are ignored with a warning") {
  std::string path = temp_file("good.yaml", kGood);
  auto r = run_cli("simulate " + path + " --set strategy.kind=zero3 --json " + temp_file("ignored.json", "") + " -q");
  CHECK(r.status == 0);
  CHECK(r.output.find("warning") != std::string::npos);
  CHECK(r.output.find("strategy.partition_size: ignored under strategy.kind zero3") != std::string::npos);
}

TEST_CASE("--json writes the whole result and nothing on failure") {
  std::string path = temp_file("good.yaml", kGood);
  std::string out = micsim::test::temp_path("out.json");
  std::remove(out.c_str());
  auto bad = run_cli("simulate " + path + " --set cluster.nodes=0 --json " + out);
  CHECK(bad.status == 2);
  CHECK(std::fopen(out.c_str(), "r") == nullptr);
  auto ok = run_cli("simulate " + path + " --json " + out + " -q");
  CHECK(ok.status == 0);
  auto j = nlohmann::json::parse(read_whole_file(out));
  CHECK(j["world_size"] == 32);
  CHECK(j["engine"] == "analytic");
  auto again = run_cli("simulate " + path + " --json - -q");
  CHECK(again.output == j.dump(2) + "\n");  // deterministic, byte for byte
}
