// CollNet (in-network reduction, InfiniBand SHARP): what it moves, when NCCL may run it, and the one
// published run that forced it (CoreWeave, 12 x 8 H100, NCCL_ALGO=COLLNETCHAIN).
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"

#include "models/calibration/calibration.hpp"

#include "models/collective/collective.hpp"
#include "models/hardware/catalog.hpp"
#include "models/io/input_error.hpp"
#include "validation/collective_validation.hpp"
#include "validation/nccl_tests.hpp"

using namespace micsim;

namespace {

NetworkParams h100_network(bool collnet) {
  NetworkParams n = NetworkParams::from_instance(HardwareCatalog::builtin().instance("dgx-h100"));
  n.collnet = collnet;
  return n;
}

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TEST_CASE("CollNet: the switches reduce, so a node sends S across nodes, not a ring's 2(k-1)/k S, and the latency stays flat") {
  const NetworkParams net = h100_network(true);
  const auto g = GroupLayout::make(128, 16);
  auto chain = estimate_collnet(net, CollectiveOp::AllReduce, 4 * GiB, g, Protocol::Simple, NcclAlgorithm::CollNetChain);
  auto ring = estimate_ring(net, CollectiveOp::AllReduce, 4 * GiB, g, Protocol::Simple);
  REQUIRE(chain);
  REQUIRE(ring);
  CHECK(chain->inter_bytes_per_node == rel_approx(4 * GiB));
  CHECK(ring->inter_bytes_per_node == rel_approx(2.0 * 127 / 128 * 4 * GiB));
  // Inside the node Direct and Chain move what a one-node all_reduce of r ranks moves: 2(r-1)/r S per GPU.
  CHECK(chain->intra_bytes_per_gpu == rel_approx(2.0 * 7 / 8 * 4 * GiB));
  // NCCL's latency (tuning.cc): one trip through the switches whatever the node count, where the ring's
  // grows by two network steps per node.
  for (auto a : {NcclAlgorithm::CollNetDirect, NcclAlgorithm::CollNetChain, NcclAlgorithm::NVLS}) {
    auto few = estimate_collnet(net, CollectiveOp::AllReduce, 8, GroupLayout::make(32, 4), Protocol::Simple, a);
    auto many = estimate_collnet(net, CollectiveOp::AllReduce, 8, GroupLayout::make(512, 64), Protocol::Simple, a);
    REQUIRE(few);
    REQUIRE(many);
    CHECK(many->latency_s == rel_approx(few->latency_s));
  }
  auto ring_few = estimate_ring(net, CollectiveOp::AllReduce, 8, GroupLayout::make(32, 4), Protocol::Simple);
  auto ring_many = estimate_ring(net, CollectiveOp::AllReduce, 8, GroupLayout::make(512, 64), Protocol::Simple);
  CHECK(ring_many->latency_s > 5 * ring_few->latency_s);
  // Chain: 2(r-1) NVLink hops of 2.8 us, then 30 us through the network plus latencyInter twice (Simple's flush).
  auto small = estimate_collnet(net, CollectiveOp::AllReduce, 8, GroupLayout::make(32, 4), Protocol::Simple,
                                NcclAlgorithm::CollNetChain);
  CHECK(small->latency_s == rel_approx(14 * 2.8e-6 + 30e-6 + 2 * net.inter_latency_s + net.inter_fixed_latency_s));
}

TEST_CASE("CollNet runs only where the cluster has it, for all_reduce in Simple across nodes, and NVLS crosses nodes only with it") {
  const NetworkParams off = h100_network(false), on = h100_network(true);
  const auto g = GroupLayout::make(64, 8);
  auto algorithms_of = [](const NetworkParams& n, CollectiveOp op, const GroupLayout& layout) {
    std::vector<std::string> names;
    for (const auto& c : CollectiveModel(n).candidates(op, GiB, layout)) names.push_back(to_string(c.algorithm));
    return names;
  };
  auto has = [](const std::vector<std::string>& v, const char* a) { return std::find(v.begin(), v.end(), a) != v.end(); };
  for (const char* a : {"collnet_direct", "collnet_chain", "nvls"}) {
    CHECK_FALSE(has(algorithms_of(off, CollectiveOp::AllReduce, g), a));
    CHECK(has(algorithms_of(on, CollectiveOp::AllReduce, g), a));
    CHECK_FALSE(has(algorithms_of(on, CollectiveOp::AllGather, g), a));
  }
  CHECK_FALSE(has(algorithms_of(on, CollectiveOp::AllReduce, GroupLayout::make(8, 1)), "collnet_chain"));
  CHECK_FALSE(estimate_collnet(on, CollectiveOp::AllReduce, GiB, g, Protocol::LL128, NcclAlgorithm::CollNetChain));
  NetworkParams no_switch_reduction = on;
  no_switch_reduction.nvls = false;  // NVLS across nodes needs NVLS inside them too
  CHECK_FALSE(estimate_collnet(no_switch_reduction, CollectiveOp::AllReduce, GiB, g, Protocol::Simple, NcclAlgorithm::NVLS));
  // With CollNet NCCL's own model rates NVLS + SHARP fastest for a large all_reduce on H100.
  CHECK(CollectiveModel(on).estimate(CollectiveOp::AllReduce, 4 * GiB, g).algorithm == NcclAlgorithm::NVLS);
  CHECK(CollectiveModel(off).estimate(CollectiveOp::AllReduce, 4 * GiB, g).algorithm != NcclAlgorithm::NVLS);
}

TEST_CASE("NCCL rates CollNet-Direct at 0.85 on Hopper (tuning.cc), while the transfer itself runs at the fabric's rate") {
  const NetworkParams net = h100_network(true);
  const NetworkParams nccl_view = net.as_nccl_models_it();
  CHECK(nccl_view.collnet_direct_rating == rel_approx(0.85));
  CHECK(net.collnet_direct_rating == rel_approx(1.0));
  const auto g = GroupLayout::make(64, 8);
  auto rated = [&](const NetworkParams& n, NcclAlgorithm a) {
    auto e = estimate_collnet(n, CollectiveOp::AllReduce, 8 * GiB, g, Protocol::Simple, a);
    return e->time_s - e->latency_s;
  };
  // Same bytes inside the node, so without the rating Direct and Chain would tie on bandwidth.
  CHECK(rated(net, NcclAlgorithm::CollNetDirect) == rel_approx(rated(net, NcclAlgorithm::CollNetChain)));
  CHECK(rated(nccl_view, NcclAlgorithm::CollNetDirect) ==
        rel_approx(rated(nccl_view, NcclAlgorithm::CollNetChain) / 0.85));
}

TEST_CASE("a run enables CollNet with NCCL_COLLNET_ENABLE=1 on a fabric its text calls SHARP, and NCCL_ALGO can force it") {
  CHECK(collnet_enabled("mpirun -x NCCL_COLLNET_ENABLE=1 all_reduce_perf (InfiniBand NDR + SHARP)"));
  CHECK_FALSE(collnet_enabled("mpirun -x NCCL_COLLNET_ENABLE=1 all_reduce_perf (InfiniBand NDR)"));  // no plugin, no switches
  CHECK_FALSE(collnet_enabled("NCCL_COLLNET_ENABLE=0 on a SHARP fabric"));
  CHECK_FALSE(collnet_enabled("SHARP fabric, CollNet left at NCCL's default (off)"));
  CHECK(forced_choice("NCCL_ALGO=COLLNETCHAIN NCCL_COLLNET_ENABLE=1", CollectiveOp::AllReduce).algorithm ==
        NcclAlgorithm::CollNetChain);
  CHECK(forced_choice("NCCL_ALGO=CollNetDirect", CollectiveOp::AllReduce).algorithm == NcclAlgorithm::CollNetDirect);
}

TEST_CASE("CoreWeave's 12 x 8 H100 CollNet-Chain run, from the catalog (nothing fitted on it): within 6 % at every size") {
  // coreweave/nccl-tests README since fb4787c (2023-06-15): NCCL 2.18.1, NCCL_ALGO=COLLNETCHAIN,
  // NCCL_COLLNET_ENABLE=1, 512 MiB - 8 GiB, busbw 356-387 GB/s. The chain is bound by NVLink inside the node
  // (2(r-1)/r S per GPU at the NVLink terms fitted on one-node files), not by the network.
  auto rows = load_nccl_tests(std::string(MICSIM_SOURCE_DIR) + "/validation/data/nccl-tests/coreweave_nccl_tests_readme.csv");
  std::vector<NcclTestRow> sharp;
  for (const auto& r : rows)
    if (r.collnet) sharp.push_back(r);
  REQUIRE(sharp.size() == 5);
  auto cmp = compare_collectives(sharp, ClusterMap::builtin());
  REQUIRE(cmp.size() == 5);
  for (const auto& c : cmp) {
    INFO(c.row.bytes, " B: published ", c.published / 1e9, " GB/s, predicted ", c.predicted / 1e9);
    CHECK(c.estimate.algorithm == NcclAlgorithm::CollNetChain);
    CHECK(c.estimate.bottleneck == Tier::Intra);
    CHECK(std::fabs(c.error()) < 0.06);
  }
  // Without CollNet the same forced name falls back to a ring, which the fabric caps far lower at 8 GiB.
  NcclTestRow plain = sharp.back();
  plain.collnet = false;
  auto ring = compare_collectives({plain}, ClusterMap::builtin());
  REQUIRE(ring.size() == 1);
  CHECK(ring.front().estimate.algorithm == NcclAlgorithm::Ring);
  CHECK(ring.front().error() < -0.1);
}

TEST_CASE("cluster.collnet in a scenario: DDP's gradient all_reduce over 16 H100 nodes runs through the switches and costs less") {
  auto step = [](const std::string& collnet) {
    return test::run(test::scenario("dgx-h100", 16, "llama2-7b", "ddp", 4, 512, {"cluster.collnet=" + collnet}));
  };
  const SimulationResult with = step("true"), without = step("false");
  auto grad_reduction = [](const SimulationResult& r) {
    for (const auto& c : r.collectives)
      if (c.estimate.op == CollectiveOp::AllReduce && c.estimate.bytes > 1e8) return c;
    FAIL("no gradient all_reduce in the step");
    return CollectiveSummary{};
  };
  const CollectiveSummary a = grad_reduction(with), b = grad_reduction(without);
  CHECK(a.estimate.algorithm == NcclAlgorithm::NVLS);
  CHECK(a.estimate.inter_bytes_per_node < 0.6 * b.estimate.inter_bytes_per_node);
  CHECK(a.total_s < b.total_s);
  CHECK(with.iteration_time_s <= without.iteration_time_s);
  CHECK_THROWS_AS(test::scenario("dgx-h100", 16, "llama2-7b", "ddp", 4, 512, {"cluster.collnet=sometimes"}), InputError);
}

TEST_CASE("CollNet only on a fabric whose switches reduce: EFA has no SHARP, and asking for it is an input error (exit 2)") {
  CHECK(HardwareCatalog::builtin().find_fabric("infiniband-ndr")->sharp);
  CHECK_FALSE(HardwareCatalog::builtin().find_fabric("efa-v2")->sharp);
  CHECK_THROWS_WITH_AS(test::scenario("p5.48xlarge", 4, "llama2-7b", "ddp", 4, 512, {"cluster.collnet=true"}),
                       doctest::Contains("fabric 'efa-v2' has none"), InputError);
  const auto cli = test::run_cli("collective --instance p5.48xlarge --nodes 4 --collnet -b 1G -e 1G");
  CHECK(cli.status == 2);
  CHECK(cli.output.find("SHARP") != std::string::npos);
  CHECK(test::run_cli("collective --instance dgx-h100 --nodes 4 --collnet -b 1G -e 1G", false).status == 0);
}

TEST_CASE("calibrate fits SHARP's share of the NICs from logs of a CollNet run, and a log of micsim's reads back as one") {
  using test::run_cli;
  // NVLS + SHARP bound by the network: 0.55 of 8 x 400 Gb/s is below NVLS's rate inside the node.
  const std::string truth = test::temp_file("collnet-truth.yaml", "instance: dgx-h100\nnetwork: {collnet_efficiency: 0.55}\n");
  std::string logs;
  for (int nodes : {4, 8, 16}) {
    const std::string out = test::temp_path("collnet-ar" + std::to_string(nodes) + ".txt");
    REQUIRE(run_cli("collective --instance dgx-h100 --collnet --nodes " + std::to_string(nodes) +
                    " --op all_reduce -b 64M -e 8G -f 4 --calibration " + truth + " > " + out).status == 0);
    const auto rows = load_nccl_tests(out);
    REQUIRE(!rows.empty());
    CHECK(rows.front().collnet);  // the log says NCCL_COLLNET_ENABLE=1 and SHARP
    logs += " --nccl-tests " + out;
  }
  const std::string cal = test::temp_path("collnet-fit.yaml");
  auto r = run_cli("calibrate" + logs + " --instance dgx-h100 --out " + cal);
  REQUIRE(r.status == 0);
  const Calibration c = load_calibration(cal);
  REQUIRE(c.collnet_efficiency.has_value());
  CHECK(*c.collnet_efficiency == rel_approx(0.55).epsilon(0.03));
  // The same logs without the CollNet lines cannot say so: --collnet does, and only on a fabric with SHARP.
  CHECK(run_cli("calibrate" + logs + " --instance p5.48xlarge --collnet --out " + test::temp_path("x.yaml")).status == 2);
}
