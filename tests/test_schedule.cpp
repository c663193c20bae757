// The task graph each strategy produces: which collectives, on which group, how often.
#include <doctest/doctest.h>

#include <map>

#include "helpers.hpp"

using namespace micsim;
using micsim::test::scenario;

struct Counts {
  std::map<std::string, int> by_kind;                  // task kind -> calls per step
  std::map<std::string, std::map<int, int>> per_micro; // task kind -> micro-step -> calls
  std::map<std::string, std::string> group;            // task kind -> group of its last call
};

static Counts count(const PreparedSimulation& p) {
  Counts c;
  for (const auto& t : p.graph.tasks) {
    std::string k = to_string(t.kind);
    c.by_kind[k]++;
    c.per_micro[k][t.micro_step]++;
    if (!is_compute(t.kind)) c.group[k] = to_string(p.graph.comm_ops[t.op].group);
  }
  return c;
}

TEST_CASE("MiCS 2-hop: reduce-scatter in the group every micro-step, replication all-reduce at the last only") {
  auto p = prepare_simulation(scenario("p4d.24xlarge", 4, "bert-10b", "mics", 8, 8 * 32 * 4, {"strategy.partition_size=8"}));
  auto c = count(p);
  CHECK(p.graph.micro_steps == 4);
  for (int m = 0; m < 4; ++m) CHECK(c.per_micro["grad_reduce_scatter"][m] > 0);
  CHECK(c.per_micro["grad_all_reduce"].size() == 1);
  CHECK(c.per_micro["grad_all_reduce"].count(3) == 1);
  CHECK(c.group["grad_reduce_scatter"] == "partition_group");
  CHECK(c.group["grad_all_reduce"] == "replication_group");
  CHECK(c.by_kind["forward"] == 4 * p.graph.units);
  CHECK(c.by_kind["recompute"] == 4 * p.workload.model.layers);  // blocks only
}

TEST_CASE("HSDP (FSDP1 HYBRID_SHARD) all-reduces across groups every micro-step, FSDP2-style two_hop_sync defers it") {
  auto fsdp1 = count(prepare_simulation(scenario("p4d.24xlarge", 4, "bert-10b", "hsdp", 8, 8 * 32 * 4, {"strategy.partition_size=8"})));
  for (int m = 0; m < 4; ++m) CHECK(fsdp1.per_micro["grad_all_reduce"][m] == fsdp1.per_micro["grad_reduce_scatter"][m]);
  auto fsdp2 = count(prepare_simulation(scenario("p4d.24xlarge", 4, "bert-10b", "hsdp", 8, 8 * 32 * 4,
                                                 {"strategy.partition_size=8", "strategy.two_hop_sync=true"})));
  CHECK(fsdp2.per_micro["grad_all_reduce"].size() == 1);
}

TEST_CASE("DDP reduces only at the accumulation boundary, ZeRO-3 reduce-scatters every micro-step over all GPUs") {
  auto ddp = count(prepare_simulation(scenario("p4de.24xlarge", 2, "llama2-7b", "ddp", 1, 64, {}, 2048)));
  CHECK(ddp.per_micro["grad_all_reduce"].size() == 1);
  CHECK(ddp.by_kind.count("param_all_gather") == 0);
  CHECK(ddp.group["grad_all_reduce"] == "world");
  auto z3 = count(prepare_simulation(scenario("p4de.24xlarge", 2, "llama2-7b", "zero3", 1, 64, {}, 2048)));
  CHECK(z3.per_micro["grad_reduce_scatter"].size() == 4);
  CHECK(z3.group["grad_reduce_scatter"] == "world");
  CHECK(z3.by_kind.count("grad_all_reduce") == 0);
  auto z2 = count(prepare_simulation(scenario("p4de.24xlarge", 2, "llama2-7b", "zero2", 1, 64, {}, 2048)));
  CHECK(z2.by_kind["param_all_gather_after_step"] >= 1);
  CHECK(z2.by_kind.count("param_all_gather") == 0);
}

TEST_CASE("MiCS gathers hierarchically only when the partition group spans nodes") {
  auto in_node = count(prepare_simulation(scenario("p4d.24xlarge", 4, "bert-10b", "mics", 8, 256, {"strategy.partition_size=8"})));
  CHECK(in_node.by_kind.count("param_all_gather_inter_node") == 0);
  auto spanning = prepare_simulation(scenario("p4d.24xlarge", 4, "bert-10b", "mics", 8, 256, {"strategy.partition_size=16"}));
  auto c = count(spanning);
  CHECK(c.by_kind["param_all_gather_inter_node"] == c.by_kind["param_all_gather_intra_node"]);
  CHECK(c.by_kind["param_all_gather_inter_node"] == c.by_kind["param_gather_rearrange_copy"]);
  CHECK(c.by_kind.count("param_all_gather") == 0);
  auto flat = count(prepare_simulation(scenario("p4d.24xlarge", 4, "bert-10b", "mics", 8, 256,
                                                {"strategy.partition_size=16", "strategy.hierarchical_allgather=false"})));
  CHECK(flat.by_kind.count("param_all_gather_inter_node") == 0);
  CHECK(flat.by_kind["param_all_gather"] == c.by_kind["param_all_gather_inter_node"]);
}

TEST_CASE("every gradient element is reduced exactly once per micro-step (bytes conserved across buckets)") {
  for (const char* kind : {"zero3", "mics", "hsdp"}) {
    auto p = prepare_simulation(scenario("p4d.24xlarge", 2, "gpt2-10b", kind, 4, 4 * 16 * 2));
    std::map<int, double> bytes;
    for (const auto& t : p.graph.tasks)
      if (t.kind == TaskKind::GradReduceScatter) bytes[t.micro_step] += p.graph.comm_ops[t.op].bytes;
    for (const auto& [m, b] : bytes) CHECK(b == rel_approx(2.0 * p.workload.params.total));
  }
}

TEST_CASE("identical middle micro-steps are extrapolated: the same step time as the full graph") {
  for (const char* kind : {"zero3", "mics", "ddp", "hsdp"}) {
    auto sc = scenario("p4d.24xlarge", 2, "bert-10b", kind, 2, 2 * 16 * 24, {"model.layers=12"});
    PrepareOptions full;
    full.max_built_micro_steps = 0;
    auto pc = prepare_simulation(sc), pf = prepare_simulation(sc, full);
    CHECK(pc.graph.micro_steps == 4);
    CHECK(pc.graph.total_micro_steps == 24);
    CHECK(pf.graph.micro_steps == 24);
    auto rc = simulate_analytic(pc), rf = simulate_analytic(pf);
    MESSAGE(std::string(kind) << ": compressed " << rc.iteration_time_s << " s, full " << rf.iteration_time_s << " s");
    CHECK_MESSAGE(rc.iteration_time_s == rel_approx(rf.iteration_time_s).epsilon(0.005), std::string(kind));
    CHECK(rc.compute_s == rel_approx(rf.compute_s).epsilon(0.005));
    CHECK(rc.exposed_comm_s + rc.idle_s == rel_approx(rf.exposed_comm_s + rf.idle_s).epsilon(0.02));
  }
}
