// The SimGrid engine's quotient runs (sim/des/symmetry.hpp): which clusters repeat, and that simulating
// one block of nodes gives the step of simulating them all.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "sim/costs/uplink_sharing.hpp"
#include "sim/des/simulate_simgrid.hpp"
#include "sim/des/symmetry.hpp"

using namespace micsim;
using micsim::test::read_text;
using micsim::test::scenario;

namespace {

// The period; `jitter` false: without sampled per-node jitter (the structure alone).
int period_of(Scenario sc, bool jitter = false) {
  if (!jitter) sc.calibration.jitter_cv = 0.0;
  PreparedSimulation p = prepare_simulation(sc);
  ClusterTopology t = build_topology(sc.cluster.instance, sc.cluster.nodes, fabric_layout(sc.cluster), sc.what_if.degraded);
  return des::find_node_symmetry(p, t).period;
}

Scenario large(int nodes, std::vector<std::string> extra = {}) {
  extra.push_back("cluster.nodes=" + std::to_string(nodes));
  extra.push_back("training.global_batch=" + std::to_string(16 * nodes));
  return parse_scenario_text(read_text(std::string(MICSIM_SOURCE_DIR) + "/scenarios/large/gpt-175b-mics-16384-gpus.yaml"),
                             "<large>", extra);
}

// Contended: 4:1 oversubscribed leaves of 4 nodes, consecutive nodes on different leaves.
Scenario contended(const std::string& kind, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), {"cluster.fabric.oversubscription=4", "cluster.fabric.nodes_per_leaf=4", "cluster.fabric.placement=scattered"});
  return scenario("p4d.24xlarge", 16, "bert-10b", kind, 1, 256, extra);
}

struct Both {
  double full, quotient;
  int simulated;
  int critical_node;  // the block run's
};

Both run_both(const Scenario& sc) {
  PreparedSimulation p = prepare_simulation(sc);
  des::DesOptions every_node, block;
  every_node.use_symmetry = false;
  des::DesOutcome q;
  const double full = simulate_simgrid(p, every_node).iteration_time_s;
  const double quotient = simulate_simgrid(p, block, &q).iteration_time_s;
  return {full, quotient, q.simulated_nodes, q.critical_node};
}

}  // namespace

TEST_CASE("symmetry: the period a cluster repeats with") {
  // MiCS p = 128 (16 nodes) on leaves of 32 packed nodes: a leaf holds two partition groups.
  CHECK(period_of(large(128)) == 32);
  CHECK(period_of(large(2048)) == 32);
  // Partition groups inside a node, one replication ring over every node, one leaf: every node alike.
  CHECK(period_of(scenario("p4d.24xlarge", 16, "bert-10b", "mics", 1, 256, {"strategy.partition_size=8"})) == 1);
  // ZeRO-3's world ring over scattered leaves: node n + 1 sits on the next leaf; still every node alike.
  CHECK(period_of(contended("zero3")) == 1);
  // MiCS p = 32 (4 nodes) scattered over 4 leaves: a partition group is one node per leaf.
  CHECK(period_of(contended("mics", {"strategy.partition_size=32"})) == 4);
  // With jitter, copies that share an oversubscribed uplink drift apart (symmetry.hpp): every node runs.
  CHECK(period_of(contended("mics", {"strategy.partition_size=32"}), true) == 16);
  CHECK(period_of(contended("mics", {"strategy.partition_size=32", "cluster.fabric.oversubscription=1"}), true) == 4);
  CHECK(period_of(large(2048), true) == 32);  // packed: each copy has its own leaves
  // A slow node: the copy of the block that holds it is simulated (below), except where copies share
  // an oversubscribed uplink, as with jitter.
  CHECK(period_of(large(128, {"what_if.slow_node.node=100", "what_if.slow_node.compute_factor=1.5"})) == 32);
  CHECK(period_of(contended("zero3", {"what_if.slow_node.node=3", "what_if.slow_node.compute_factor=1.5"})) == 16);
  // Nothing repeats: a degraded NIC, or leaves of different sizes (10 nodes on 3 leaves).
  CHECK(period_of(contended("zero3", {"what_if.degraded_nic.node=2", "what_if.degraded_nic.bandwidth_factor=0.5"})) == 16);
  CHECK(period_of(scenario("p4d.24xlarge", 10, "bert-10b", "zero3", 1, 160,
                           {"cluster.fabric.oversubscription=2", "cluster.fabric.nodes_per_leaf=4", "cluster.fabric.placement=scattered"})) == 10);
}

TEST_CASE("symmetry: a block of nodes gives the step of the whole cluster") {
  std::vector<Scenario> cases = {
      contended("zero3"),                                                  // world ring through scaled uplinks
      contended("mics", {"strategy.partition_size=32", "strategy.hierarchical_allgather=true"}),
      contended("hsdp", {"strategy.partition_size=8"}),
      scenario("p3dn.24xlarge", 8, "bert-10b", "zero3", 2, 256, {"model.layers=12"}),  // one NIC link: per-GPU flows
      scenario("p4d.24xlarge", 8, "llama2-13b", "zero1", 1, 32, {"parallelism.tp=8", "parallelism.pp=2"}, 2048),
      contended("mics", {"strategy.partition_size=32", "cluster.fabric.oversubscription=1"}),  // uplinks scaled, never binding
      large(64),                                                           // leaf uplinks carried as they are
      large(128),
  };
  SUBCASE("with nothing that differs from node to node: equal up to the max-min solver's rounding") {
    for (auto sc : cases) {
      sc.calibration.jitter_cv = 0.0;
      const Both b = run_both(sc);
      CHECK(b.simulated < sc.cluster.nodes);
      CHECK_MESSAGE(std::fabs(b.quotient / b.full - 1) < 1e-6,
                    sc.name << ": every node " << b.full << " s, block of " << b.simulated << " nodes " << b.quotient << " s");
    }
  }
  SUBCASE("with sampled per-node jitter (the copy of the block with the slowest node): within 1 %") {
    for (const auto& sc : cases) {
      const Both b = run_both(sc);
      // Copies sharing an oversubscribed uplink drift apart and contend less: every node is simulated.
      const bool shared_oversubscribed = sc.cluster.fabric.scattered && sc.cluster.fabric.oversubscription > 1;
      CHECK((b.simulated == sc.cluster.nodes) == shared_oversubscribed);
      CHECK_MESSAGE(std::fabs(b.quotient / b.full - 1) < 0.01,
                    sc.name << ": every node " << b.full << " s, block of " << b.simulated << " nodes " << b.quotient << " s");
    }
  }
}

TEST_CASE("symmetry: with a slow node, the copy of the block that holds it gives the step within 1 %") {
  const std::vector<std::string> slow = {"what_if.slow_node.node=37", "what_if.slow_node.compute_factor=1.5"};
  std::vector<Scenario> cases = {
      large(64, slow),
      scenario("p4d.24xlarge", 16, "bert-10b", "mics", 8, 2048, {"strategy.partition_size=8", "what_if.slow_node.node=13", slow[1]}),
      scenario("p4d.24xlarge", 16, "bert-10b", "mics", 8, 2048,
               {"strategy.partition_size=32", "strategy.hierarchical_allgather=true", "what_if.slow_node.node=3", slow[1]}),
      scenario("p4d.24xlarge", 8, "llama2-13b", "zero1", 1, 32, {"parallelism.tp=8", "parallelism.pp=2", "what_if.slow_node.node=3", slow[1]}, 2048),
  };
  for (const auto& sc : cases) {
    const Both b = run_both(sc);
    CHECK(b.simulated < sc.cluster.nodes);
    // The critical node is reported in the cluster's numbering, in the copy that holds the slow node.
    CHECK(b.critical_node / b.simulated == sc.what_if.slow_nodes.front().node / b.simulated);
    CHECK_MESSAGE(std::fabs(b.quotient / b.full - 1) < 0.01,
                  sc.name << ": every node " << b.full << " s, block of " << b.simulated << " nodes " << b.quotient << " s");
  }
}
