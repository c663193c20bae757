// Prices and budgets in plans: dated price tiers, user prices, deadlines, budgets, the nearest miss;
// user catalogs merged without rebuilding.
#include <doctest/doctest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "models/hardware/catalog.hpp"
#include "models/hardware/prices.hpp"
#include "models/io/input_file.hpp"
#include "planner/plan.hpp"

using namespace micsim;
using micsim::test::run_cli;
using micsim::test::run_cli_stdout;
using micsim::test::temp_file;

static const char* kLlama = R"(cluster: {instance: p4d.24xlarge, nodes: 4}
model: {preset: llama2-7b}
training: {seq_len: 2048, micro_batch: 2, global_batch: 512, precision: bf16, activation_checkpointing: true}
strategy: {kind: zero3}
plan: {strategies: [zero3], nodes: [2, 4, 8, 16], refine: 0, target_tokens: 1.0e11}
)";

static PlanResult plan_with(const std::string& path, Objective o, double max_days, double max_usd = 0) {
  PlanSpec spec = read_plan_block(path, read_whole_file(path));
  spec.objective = o;
  spec.max_days = max_days;
  spec.max_usd = max_usd;
  spec.progress = false;
  return run_plan(path, {}, spec);
}

TEST_CASE("price book: the newest quote of a tier, undated quotes rank last, every quote has a source") {
  const PriceBook& b = PriceBook::builtin();
  auto od = b.quote("p5.48xlarge", "on_demand");
  REQUIRE(od);
  CHECK(od->usd_per_hour == rel_approx(55.04));  // after the June 2025 cut (was 98.32 at launch)
  CHECK(od->date >= "2025-06");
  for (const auto& inst : HardwareCatalog::builtin().instance_names())
    for (const auto& q : b.quotes(inst)) {
      CHECK_MESSAGE(!q.source.empty(), inst << " " << q.tier);
      CHECK(q.usd_per_hour > 0);
    }
  // The catalog's instance price is the newest on-demand quote.
  CHECK(*HardwareCatalog::builtin().instance("p5.48xlarge").price_usd_per_hour == rel_approx(55.04));
  PriceBook t;
  t.merge(YamlNode::load_string(R"(x:
  spot:
    - {usd_per_hour: 1, date: "unknown", source: "a"}
    - {usd_per_hour: 2, date: "2024-01", source: "b"}
    - {usd_per_hour: 3, date: "2023-12-31", source: "c"}
)", "<t>"));
  CHECK(t.quote("x", "spot")->usd_per_hour == 2);
  CHECK_THROWS_AS(t.merge(YamlNode::load_string("x: {spot: {usd_per_hour: 1, date: 'May 2024', source: s}}", "<t>")), InputError);
  CHECK_THROWS_AS(t.merge(YamlNode::load_string("x: {spot: {usd_per_hour: 1, date: '2024-05'}}", "<t>")), InputError);
}

TEST_CASE("cost alone picks the smallest cluster, cost within a deadline picks the cheapest that meets it") {
  std::string path = temp_file("plan-deadline.yaml", kLlama);
  PlanResult cheap = plan_with(path, Objective::Cost, 0);
  REQUIRE(!cheap.ranking.empty());
  const int cheapest_nodes = cheap.ranking.front().eval->scenario->cluster.nodes;
  CHECK(cheapest_nodes == 2);  // near-linear scaling: $ per token grows with the cluster
  // A deadline between the 2-node and the 16-node times.
  double days2 = 0, days16 = 0;
  for (const auto& row : cheap.ranking) {
    if (row.eval->scenario->cluster.nodes == 2) days2 = row.hours_for_target / 24;
    if (row.eval->scenario->cluster.nodes == 16) days16 = row.hours_for_target / 24;
  }
  REQUIRE(days2 > days16);
  const double deadline = 0.5 * (days2 + days16);
  PlanResult r = plan_with(path, Objective::CostWithinDeadline, deadline);
  REQUIRE(!r.ranking.empty());
  const PlanRow& w = r.ranking.front();
  CHECK(w.hours_for_target / 24 <= deadline);
  CHECK(w.eval->scenario->cluster.nodes > 2);
  // Nothing cheaper meets the deadline: every cheaper row of the unconstrained ranking misses it.
  for (const auto& row : cheap.ranking)
    if (row.usd_for_target < w.usd_for_target) CHECK(row.hours_for_target / 24 > deadline);
  CHECK(r.pruned.count("misses the deadline (max_days) (analytic)") == 1);
}

TEST_CASE("nothing within the deadline or budget: exit 4 with the nearest miss, bad combinations exit 2") {
  std::string path = temp_file("plan-miss.yaml", kLlama);
  PlanResult r = plan_with(path, Objective::CostWithinDeadline, 0.01);
  CHECK(r.ranking.empty());
  CHECK(r.explanation.find("Nearest miss: 16 x p4d.24xlarge") != std::string::npos);
  auto c = run_cli("plan " + path + " --objective cost-within-deadline --max-days 0.01");
  CHECK(c.status == 4);
  CHECK(c.output.find("Nearest miss") != std::string::npos);
  auto b = run_cli("plan " + path + " --max-usd 1");
  CHECK(b.status == 4);
  CHECK(b.output.find("over the budget") != std::string::npos);
  CHECK(run_cli("plan " + path + " --objective cost-within-deadline").status == 2);  // no deadline
  CHECK(run_cli("plan " + path + " --set plan.bogus=2").status == 2);
  CHECK(run_cli("plan " + path + " --set plan.max_days=-1").status == 2);
  CHECK(run_cli("plan " + path + " --price p4d.24xlarge").status == 2);
  CHECK(run_cli("plan " + path + " --price nosuch=3").status == 2);
}

TEST_CASE("--price and --price-tier set the cluster price, and the plan says which quote it used") {
  std::string path = temp_file("plan-price.yaml", kLlama);
  auto od = run_cli_stdout("plan " + path + " --json - -q");
  auto spot = run_cli_stdout("plan " + path + " --price-tier spot --json - -q");
  auto mine = run_cli_stdout("plan " + path + " --price p4d.24xlarge=10 --json - -q");
  REQUIRE(od.status == 0);
  REQUIRE(spot.status == 0);
  REQUIRE(mine.status == 0);
  auto jo = nlohmann::json::parse(od.output), js = nlohmann::json::parse(spot.output), jm = nlohmann::json::parse(mine.output);
  const auto& ro = jo["ranking"][0];
  const int nodes = ro["nodes"].get<int>();
  CHECK(ro["usd_per_hour"].get<double>() == rel_approx(nodes * PriceBook::builtin().quote("p4d.24xlarge", "on_demand")->usd_per_hour));
  CHECK(js["ranking"][0]["usd_per_hour"].get<double>() < ro["usd_per_hour"].get<double>());
  CHECK(js["price_tier"] == "spot");
  CHECK(js["ranking"][0]["price_source"].get<std::string>().find("spot") != std::string::npos);
  CHECK(jm["ranking"][0]["usd_per_hour"].get<double>() == rel_approx(10.0 * jm["ranking"][0]["nodes"].get<int>()));
  CHECK(jm["price_overrides"]["p4d.24xlarge"]["origin"] == "--price");
}

TEST_CASE("user catalogs: an instance added without rebuilding, merged all or nothing, errors at file:line") {
  std::string cat = temp_file("cat.yaml", R"(instances:
  lab-h100:
    gpu: H100-SXM-80GB
    gpus_per_node: 8
    intra_node: {kind: nvlink, gbytes_per_s: 360}
    network: {nics: 8, gbits_per_nic: 400, fabric: infiniband-ndr}
    price_usd_per_hour: 20
    source: "our lab"
)");
  std::string sc = temp_file("cat-sc.yaml", R"(cluster: {instance: lab-h100, nodes: 2}
model: {preset: llama2-7b}
training: {seq_len: 2048, micro_batch: 2, global_batch: 64, precision: bf16}
strategy: {kind: zero3}
)");
  CHECK(run_cli("simulate " + sc).status == 2);  // unknown without the catalog
  auto ok = run_cli_stdout("simulate " + sc + " --catalog " + cat + " --json -");
  REQUIRE(ok.status == 0);
  CHECK(nlohmann::json::parse(ok.output)["cost"]["usd_per_hour"].get<double>() == rel_approx(40.0));
  CHECK(run_cli("catalog show lab-h100").status == 2);
  std::string bad = temp_file("cat-bad.yaml", "instances:\n  x:\n    gpu: H99\n");
  auto e = run_cli("catalog list --catalog " + bad);
  CHECK(e.status == 2);
  CHECK(e.output.find("cat-bad.yaml:3:10") != std::string::npos);
  auto shown = run_cli_stdout("catalog show lab-h100 --catalog " + cat + " --json -");
  REQUIRE(shown.status == 0);
  CHECK(nlohmann::json::parse(shown.output)["gpus_per_node"] == 8);
  ::setenv("MICSIM_CATALOG_PATH", cat.c_str(), 1);  // the environment, for every command
  auto envrun = run_cli_stdout("catalog list instances");
  ::unsetenv("MICSIM_CATALOG_PATH");
  CHECK(envrun.status == 0);
  CHECK(envrun.output.find("lab-h100") != std::string::npos);
}

TEST_CASE("kernels_as: a GPU variant takes a catalog part's fitted kernel terms unless it states its own") {
  HardwareCatalog c = HardwareCatalog::builtin();
  c.merge(YamlNode::load_string(R"(gpus:
  H100-lab:
    arch: hopper
    memory_gib: 64
    peak_tflops: {bf16: 989, fp8: 1979}
    hbm_tbytes_per_s: 2.0
    kernels_as: H100-SXM-80GB
    attention_efficiency: 0.5
)", "<kernels_as>"));
  const GpuSpec& sxm = *c.find_gpu("H100-SXM-80GB");
  const GpuSpec& lab = *c.find_gpu("H100-lab");
  CHECK(lab.gemm_efficiency == sxm.gemm_efficiency);
  CHECK(lab.gemm_fp8_efficiency == sxm.gemm_fp8_efficiency);
  CHECK(lab.hbm_efficiency == sxm.hbm_efficiency);
  CHECK(lab.sustained_gemm_scale == sxm.sustained_gemm_scale);
  CHECK(lab.attention_efficiency == 0.5);            // its own value wins
  CHECK(lab.hbm_bytes_per_s == rel_approx(2.0e12));  // and its own memory
  // The built-in Grand Teton part is such a variant: a refit of the SXM part reaches it.
  const GpuSpec& gt = *c.find_gpu("H100-HBM2e-96GB");
  CHECK(gt.gemm_efficiency == sxm.gemm_efficiency);
  CHECK(gt.hbm_bytes_per_s == rel_approx(2.4e12));
  CHECK_THROWS_WITH_AS(c.merge(YamlNode::load_string("gpus:\n  x: {arch: hopper, memory_gib: 1, peak_tflops: {bf16: 1}, "
                                                     "hbm_tbytes_per_s: 1, kernels_as: H99}\n", "<bad>")),
                       doctest::Contains("expected a GPU defined before x"), InputError);
}

TEST_CASE("a GPU or fabric replaced by a user catalog reaches the built-in instances that use it, plan rows cost at the plan's price") {
  std::string cat = temp_file("cat-gpu.yaml", R"(gpus:
  A100-SXM4-40GB:
    arch: ampere
    memory_gib: 40
    peak_tflops: {fp16: 156, bf16: 156, fp32: 19.5}
    hbm_tbytes_per_s: 1.555
    source: "half-speed what-if"
)");
  std::string sc = std::string(MICSIM_SOURCE_DIR) + "/scenarios/bert-10b-mics-p3dn-16-nodes.yaml --set cluster.instance=p4d.24xlarge";
  auto base = run_cli_stdout("simulate " + sc + " --json -");
  auto slow = run_cli_stdout("simulate " + sc + " --catalog " + cat + " --json -");
  REQUIRE(base.status == 0);
  REQUIRE(slow.status == 0);
  auto b = nlohmann::json::parse(base.output), s = nlohmann::json::parse(slow.output);
  CHECK(s["peak_tflops_per_gpu"].get<double>() == rel_approx(156));
  CHECK(s["iteration_time_s"].get<double>() > 1.3 * b["iteration_time_s"].get<double>());
  std::string path = temp_file("plan-cost.yaml", kLlama);
  auto p = run_cli_stdout("plan " + path + " --price p4d.24xlarge=10 --json - -q");
  REQUIRE(p.status == 0);
  const auto plan = nlohmann::json::parse(p.output);  // kept: a range-for over a temporary's member dangles
  for (const auto& row : plan["ranking"])
    CHECK(row["cost"]["usd_per_hour"].get<double>() == rel_approx(row["usd_per_hour"].get<double>()));
}
