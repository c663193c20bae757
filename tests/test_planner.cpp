// The planner and the sweep: what they choose and why, pruning, determinism, hand-off fragments.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "helpers.hpp"
#include "models/calibration/error_bands.hpp"
#include "models/io/input_file.hpp"
#include "planner/handoff/handoff.hpp"
#include "planner/plan.hpp"
#include "planner/sweep.hpp"

using namespace micsim;
using micsim::test::run_cli;
using micsim::test::run_cli_stdout;
using micsim::test::temp_file;

static const char* kBert = R"(cluster: {instance: p3dn.24xlarge, nodes: 16}
model: {preset: bert-10b}
training: {seq_len: 512, micro_batch: 8, global_batch: 8192, precision: fp16, activation_checkpointing: true}
strategy: {kind: mics, partition_size: 8}
)";

TEST_CASE("planner: BERT-10B on 128 p3dn GPUs prefers MiCS over ZeRO-3 and says why") {
  std::string path = temp_file("plan-bert.yaml", kBert);
  PlanSpec spec;
  spec.strategies = {"zero3", "mics"};
  spec.refine = 2;
  spec.progress = false;
  PlanResult r = run_plan(path, {}, spec);
  REQUIRE(!r.ranking.empty());
  const Scenario& w = *r.ranking.front().eval->scenario;
  CHECK(w.strategy.kind == StrategyKind::MiCS);
  CHECK(r.ranking.front().refined);
  CHECK(r.explanation.find("Best zero3") != std::string::npos);
  CHECK(r.explanation.find("the winner's throughput") != std::string::npos);
  CHECK(r.explanation.find("Largest collective") != std::string::npos);
  // Every candidate is either ranked or counted under a pruning reason.
  size_t pruned = 0;
  for (const auto& [reason, n] : r.pruned) pruned += n;
  CHECK(r.ranking.size() + pruned == r.candidates);
  // Ranks within micsim's error of the winner: on one GPU (p3dn here) the spread inside a stack decides,
  // not the whole band (a stack's bias moves every candidate alike), which never admits fewer.
  const ErrorBand& b = ErrorBands::builtin().for_prediction(GpuArch::Volta, true);
  auto count = [&](double lo, double hi) {
    size_t n = 1;
    while (n < r.ranking.size() && r.ranking[n].tokens_per_s / (1 + lo) >= r.ranking.front().tokens_per_s / (1 + hi)) ++n;
    return n;
  };
  const size_t within = count(b.rel_q05, b.rel_q95);
  CHECK(ranks_within_error(r) == within);
  CHECK(within <= count(b.q05, b.q95));
  const std::string text = format_plan(r);
  if (within > 1) CHECK(text.find(fmt::format("Ranks 1-{} are within micsim's error", within)) != std::string::npos);
  else CHECK(text.find("The winner is clear of the runner-up") != std::string::npos);
  // The Pareto front is not dominated by any ranked row.
  for (size_t i : r.pareto)
    for (const auto& row : r.ranking)
      CHECK_FALSE((row.tokens_per_s > r.ranking[i].tokens_per_s &&
                   row.price_usd_per_hour / row.tokens_per_s < r.ranking[i].price_usd_per_hour / r.ranking[i].tokens_per_s));
}

TEST_CASE("planner: GPT-175B on p4d reports the smallest partition group that fits in 40 GB") {
  std::string path = temp_file("plan-175b.yaml", R"(cluster: {instance: p4d.24xlarge, nodes: 64}
model: {preset: gpt-175b}
training: {seq_len: 2048, micro_batch: 1, global_batch: 1024, precision: fp16, activation_checkpointing: true}
strategy: {kind: mics, partition_size: 128}
plan: {strategies: [mics], objective: cost, target_tokens: 3.0e11, refine: 0}
)");
  PlanSpec spec = read_plan_block(path, read_whole_file(path));
  spec.progress = false;
  PlanResult r = run_plan(path, {}, spec);
  REQUIRE(!r.smallest_fitting.empty());
  CHECK(r.smallest_fitting.front().find("p = 128 fits") != std::string::npos);
  CHECK(r.smallest_fitting.front().find("for the target") != std::string::npos);
  CHECK(r.pruned["does not fit in GPU memory"] > 0);  // p = 8 .. 64 do not
}

TEST_CASE("plans are deterministic: the same bytes whatever the thread count") {
  std::string path = temp_file("plan-det.yaml", kBert);
  std::string base = "plan " + path + " --nodes 2,4,8 --micro-batches 4,8 --refine 3 -q --json - ";
  auto a = run_cli_stdout(base + "--threads 1");
  auto b = run_cli_stdout(base + "--threads 2");
  auto c = run_cli_stdout(base + "--threads 2");
  REQUIRE(a.status == 0);
  CHECK(a.output == b.output);
  CHECK(b.output == c.output);
}

TEST_CASE("hand-off: a DeepSpeed config for MiCS, and read back") {
  Scenario sc = parse_scenario_text(kBert, "<t>", {"strategy.partition_size=16", "cluster.nodes=4", "training.global_batch=1024"});
  auto handoff = deepspeed_handoff(sc);
  REQUIRE(handoff.config);
  auto ds = *handoff.config;
  CHECK(ds["zero_optimization"]["stage"] == 3);
  CHECK(ds["zero_optimization"]["mics_shard_size"] == 16);
  CHECK(ds["zero_optimization"]["mics_hierarchical_params_gather"] == true);
  CHECK(ds["train_micro_batch_size_per_gpu"] == 8);
  CHECK(ds["gradient_accumulation_steps"] == 4);
  CHECK(handoff.notes.front().find("MiCS_Init") != std::string::npos);
  // Round trip: the fragment, read as a DeepSpeed config, describes the same training.
  std::string f = temp_file("ds.json", ds.dump(2));
  auto back = read_deepspeed_config(f, sc.world_size());
  Scenario sc2 = parse_scenario_text(kBert, "<t>", {"cluster.nodes=4", "strategy.kind=zero3"}, back.overrides);
  CHECK(sc2.strategy.kind == StrategyKind::MiCS);
  CHECK(sc2.strategy.partition_size == 16);
  CHECK(sc2.strategy.hierarchical_allgather);
  CHECK(sc2.training.global_batch == 1024);
  CHECK(sc2.training.micro_batch == 8);
  // Hugging Face "auto" keeps the scenario's value; bad types are errors with the line.
  auto hf = read_deepspeed_config(temp_file("hf.json", R"({"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}})"), 32);
  REQUIRE(hf.overrides.size() == 2);
  CHECK(hf.overrides[0].assignment == "strategy.kind=zero2");
  CHECK(hf.overrides[0].origin.find("zero_optimization.stage") != std::string::npos);
  CHECK(hf.overrides[1].assignment == "strategy.framework=deepspeed");  // a DeepSpeed config runs on DeepSpeed
  // "torch_adam": true: DeepSpeed builds torch.optim.AdamW (foreach) instead of FusedAdam.
  auto torch_adam = read_deepspeed_config(
      temp_file("ta.json", R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": true}}})"), 32);
  REQUIRE(torch_adam.overrides.size() == 2);
  CHECK(torch_adam.overrides[0].assignment == "training.optimizer=adam");
  CHECK(torch_adam.overrides[1].assignment == "training.optimizer_implementation=foreach");
  auto fused_adam = read_deepspeed_config(temp_file("fa.json", R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}})"), 32);
  for (const auto& o : fused_adam.overrides) CHECK(o.assignment.find("optimizer_implementation") == std::string::npos);
  std::string bad = temp_file("bad-ds.json", "{\n  \"zero_optimization\": {\n    \"stage\": \"three\"\n  }\n}\n");
  try {
    read_deepspeed_config(bad, 32);
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(e.where().line == 3);
    CHECK(e.key() == "zero_optimization.stage");
  }
  std::string scen = temp_file("sc.yaml", kBert);
  auto r = run_cli_stdout("simulate " + scen + " --set cluster.nodes=4 --set training.global_batch=1024 --deepspeed " + f + " --json - -q");
  CHECK(r.status == 0);
  CHECK(nlohmann::json::parse(r.output)["partition_size"] == 16);
  CHECK(run_cli("simulate " + scen + " --deepspeed " + bad).status == 2);
}

TEST_CASE("sweep: weak and strong scaling, invalid rows kept with their reason, ratios between strategies") {
  std::string path = temp_file("sweep.yaml", R"(cluster: {instance: p4d.24xlarge, nodes: 2}
model: {preset: bert-10b}
training: {seq_len: 512, micro_batch: 8, global_batch: 512, precision: fp16, activation_checkpointing: true}
strategy: {kind: mics, partition_size: 8}
)");
  SweepSpec spec;
  spec.vary = {parse_vary("cluster.nodes=2,4,8"), parse_vary("strategy.kind=zero3,mics")};
  spec.mode = ScalingMode::Weak;
  spec.progress = false;
  SweepResult weak = run_sweep(path, {}, spec);
  REQUIRE(weak.rows.size() == 6);
  for (const auto& row : weak.rows) {
    REQUIRE(row.status == "ok");
    const auto& r = row.eval->best();
    CHECK(r.grad_accumulation_steps == 4);  // as in the scenario
    CHECK(r.global_batch == 8 * r.world_size * 4);
  }
  CHECK(*weak.rows[0].scaling_efficiency == rel_approx(1.0));
  CHECK(*weak.rows[1].ratio > 1.0);  // mics over zero3 at 16 GPUs
  CHECK(weak.rows[1].ratio_to == "zero3");
  spec.mode = ScalingMode::Strong;
  SweepResult strong = run_sweep(path, {}, spec);
  for (const auto& row : strong.rows) CHECK(row.eval->best().global_batch == 512);
  CHECK(strong.rows[4].eval->best().grad_accumulation_steps == 1);
  // An invalid combination is a row with its reason, not an error.
  SweepSpec bad;
  bad.vary = {parse_vary("strategy.partition_size=3,8"), parse_vary("cluster.nodes=2")};
  bad.progress = false;
  SweepResult r = run_sweep(path, {}, bad);
  CHECK(r.rows[0].status.find("strategy.partition_size") != std::string::npos);
  CHECK(r.rows[1].status == "ok");
  auto cli = run_cli_stdout("sweep " + path + " --vary training.micro_batch=8,32 --vary training.activation_checkpointing=true,false --csv - -q");
  CHECK(cli.status == 0);
  CHECK(cli.output.find("does not fit in GPU memory") != std::string::npos);  // micro-batch 32 without checkpointing
  CHECK(cli.output.find(",ok\n") != std::string::npos);
  CHECK(run_cli("sweep " + path + " --vary nodes").status == 2);
  // A misspelt key is an input error up front (with the schema's hint), not a table of failed rows; a
  // known key with a bad value stays a row status (above).
  auto typo = run_cli("sweep " + path + " --vary training.micro_bach=8,32 -q");
  CHECK(typo.status == 2);
  CHECK(typo.output.find("did you mean 'micro_batch'") != std::string::npos);
}

TEST_CASE("plan --checkpoint: stopped, killed mid-record and resumed, the output is the bytes of one uninterrupted run") {
  std::string path = temp_file("plan-resume.yaml", kBert);
  std::string ck = temp_file("plan-resume.ckpt", "");
  std::remove(ck.c_str());
  std::string base = "plan " + path + " --nodes 2,4,8,16 --micro-batches 2,4,8 --refine 3 -q --threads 2 --json - ";
  auto whole = run_cli_stdout(base);
  REQUIRE(whole.status == 0);
  // Exit status 3 = stopped before the end, refinements so far saved.
  auto first = run_cli(base + "--checkpoint " + ck + " --stop-after 1");
  CHECK(first.status == 3);
  CHECK(first.output.find("to resume") != std::string::npos);
  auto second = run_cli(base + "--checkpoint " + ck + " --stop-after 1");
  CHECK(second.status == 3);
  // A kill while writing leaves a record cut short: it is dropped (with a note) and redone.
  std::string text = read_whole_file(ck);
  temp_file("plan-resume.ckpt", text + text.substr(text.find('\n') + 1, 40));
  auto resumed = run_cli(base + "--checkpoint " + ck);
  REQUIRE(resumed.status == 0);
  CHECK(resumed.output.find("dropped an incomplete last record") != std::string::npos);
  CHECK(run_cli_stdout(base + "--checkpoint " + ck).output == whole.output);
  // Re-runs on a completed checkpoint: the same bytes every time (the top K never depends on it).
  for (int i = 0; i < 3; ++i) CHECK(run_cli_stdout(base + "--checkpoint " + ck).output == whole.output);
  // One changed digit in a record: the checksum refuses it, at its line.
  text = read_whole_file(ck);
  size_t digit = text.find("\"iteration_time_s\":") + 20;
  text[digit] = text[digit] == '1' ? '2' : '1';
  temp_file("plan-resume.ckpt", text);
  auto damaged = run_cli(base + "--checkpoint " + ck);
  CHECK(damaged.status == 2);
  CHECK(damaged.output.find("checksum") != std::string::npos);
  // A file of another program is refused; a checkpoint of another search starts afresh and says so.
  temp_file("plan-resume.ckpt", "{\"key\": \"x\", \"done\": [1, 2");
  CHECK(run_cli(base + "--checkpoint " + ck).status == 2);
  std::remove(ck.c_str());
  run_cli(base + "--checkpoint " + ck);
  auto other = run_cli(base + "--checkpoint " + ck + " --set training.seq_len=256");
  CHECK(other.status == 0);
  CHECK(other.output.find("holds another search") != std::string::npos);
  // --stop-after alone would lose the work: refused.
  CHECK(run_cli(base + "--stop-after 5").status == 2);
  std::remove(ck.c_str());
}

TEST_CASE("progress: without a terminal, a line with done/total, elapsed and ETA at each interval") {
  std::string path = temp_file("plan-progress.yaml", kBert);
  ::setenv("MICSIM_PROGRESS_SECONDS", "0.05", 1);
  auto r = run_cli("plan " + path + " --nodes 2,4,8,16 --refine 6 -q");  // stderr is a pipe here
  ::unsetenv("MICSIM_PROGRESS_SECONDS");
  REQUIRE(r.status == 0);
  CHECK(r.output.find("plan: simgrid: ") != std::string::npos);
  CHECK(r.output.find("/6 done (") != std::string::npos);
  CHECK(r.output.find("elapsed") != std::string::npos);
  CHECK(r.output.find('\r') == std::string::npos);  // no bar redraws in a log
}

TEST_CASE("plan keeps the scenario's checkpointing policy when it searches checkpointing on and off") {
  std::string path = temp_file("plan-policy.yaml", R"(cluster: {instance: p4d.24xlarge, nodes: 2}
model: {preset: llama2-7b}
training: {seq_len: 2048, micro_batch: 2, global_batch: 64, precision: bf16, activation_checkpointing: selective-layer, checkpoint_every: 2}
strategy: {kind: zero3}
plan: {strategies: [zero3], activation_checkpointing: [true, false], refine: 0, objective: cost}
)");
  PlanSpec spec = read_plan_block(path, read_whole_file(path));
  spec.target_tokens = 1e10;  // as --target-tokens would (the block's objective is checked once flags are applied)
  spec.progress = false;
  PlanResult r = run_plan(path, {}, spec);
  std::set<std::string> policies;
  for (const auto& row : r.ranking) policies.insert(to_string(row.eval->scenario->training.checkpointing));
  CHECK(policies == std::set<std::string>{"none", "selective-layer"});
  for (const auto& row : r.ranking)
    if (row.eval->scenario->training.checkpointing == Checkpointing::SelectiveLayer) CHECK(row.eval->scenario->training.checkpoint_every == 2);
  spec.target_tokens = 0;
  CHECK_THROWS_AS(run_plan(path, {}, spec), InputError);  // cost without a target
}

TEST_CASE("planner: an InternEvo job searches ZeRO-1 over all ranks and in groups, and at 1,024 GPUs prefers groups") {
  // InternEvo's own advice (configs/7B_sft.py): "for smaller models ... split the parameters within
  // nodes with a setting <= 8"; its published 7B table: 2271 tokens/s/GPU with zero1 = -1 at 1,024 A100,
  // 3625 with zero1 = 8. One broadcast per ZeRO-1 rank after the step is what makes the large group slow.
  std::string path = temp_file("plan-internevo.yaml", R"(cluster:
  instance:
    gpu: A100-SXM4-80GB
    gpus_per_node: 8
    intra_node: {kind: nvlink, gbytes_per_s: 240}
    network: {nics: 8, gbits_per_nic: 50, fabric: roce-1600g}
  nodes: 128
model: {arch: llama, layers: 32, hidden: 4096, heads: 32, ffn: 11008, vocab: 103168}
training: {seq_len: 2048, micro_batch: 2, grad_accumulation_steps: 4, precision: bf16, activation_checkpointing: none}
strategy: {kind: zero1, framework: internevo, reduce_bucket_size: 536870912}
)");
  PlanSpec spec;
  spec.refine = 0;
  spec.progress = false;
  PlanResult r = run_plan(path, {}, spec);
  REQUIRE(r.ranking.size() >= 3);
  std::set<int> sizes;
  double all_ranks = 0, best_grouped = 0;
  for (const auto& row : r.ranking) {
    const Scenario& sc = *row.eval->scenario;
    CHECK(sc.strategy.kind == StrategyKind::Zero1);  // the only kind InternEvo runs
    const int p = make_layout(sc.strategy, sc.cluster.nodes, 8, sc.parallelism).partition_size;
    sizes.insert(p);
    if (p == 1024) all_ranks = row.tokens_per_s;
    else best_grouped = std::max(best_grouped, row.tokens_per_s);
  }
  CHECK(sizes.count(1024) == 1);
  CHECK(sizes.count(8) == 1);
  CHECK(best_grouped > 1.3 * all_ranks);
  CHECK(make_layout(r.ranking.front().eval->scenario->strategy, 128, 8, {}).partition_size <= 64);
}
