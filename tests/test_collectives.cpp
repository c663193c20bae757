// The collective library against NCCL's worked checks and published nccl-tests figures
// (docs/reference/nccl-and-compute.md §3.4, validation/data/nccl-tests/).
#include <doctest/doctest.h>

#include <map>

#include "approx.hpp"

#include "models/calibration/calibration.hpp"
#include "models/collective/collective.hpp"
#include "models/hardware/catalog.hpp"
#include "models/io/input_error.hpp"
#include "sim/scenario/scenario.hpp"

using namespace micsim;

static CollectiveModel model_for(const char* instance) {
  return CollectiveModel(NetworkParams::from_instance(HardwareCatalog::builtin().instance(instance)));
}

TEST_CASE("8 A100 on NVSwitch: large all_reduce busbw near 230 GB/s, small all_reduce near 15 us") {
  auto m = model_for("p4d.24xlarge");
  auto big = m.estimate(CollectiveOp::AllReduce, double(1 << 30), GroupLayout::make(8, 1));
  CHECK(big.busbw() / 1e9 == rel_approx(230.77).epsilon(0.03));  // NVIDIA/nccl#527: 230.77 GB/s
  // NCCL's free choice (without the EFA plugin's NCCL_PROTO=simple, below): ring LL, 6.6 + 14 x 0.6 us.
  NetworkParams free = NetworkParams::from_instance(HardwareCatalog::builtin().instance("p4d.24xlarge"));
  free.protocols.clear();
  auto small = CollectiveModel(free).estimate(CollectiveOp::AllReduce, 8, GroupLayout::make(8, 1));
  CHECK(small.time_s * 1e6 == rel_approx(15.0).epsilon(0.05));
  CHECK(small.protocol == Protocol::LL);
}

TEST_CASE("an instance's NCCL_PROTO holds for every collective: p4d runs Simple only, as aws-ofi-nccl sets it") {
  // aws-ofi-nccl src/platform-aws.c: NCCL_PROTO=simple on p4d/p4de (LL/LL128 unsafe without 128-byte
  // in-order delivery). An 8-byte all_reduce on 2 x p4de took 164.3 us (awsome-distributed-training
  // nccl-tests README, 2024): the efa-p4 terms are fitted with Simple only on those rows, so this point is in
  // sample (a consistency check of the fit, not a validation; the held-out p4d files are in validate's table).
  for (const char* inst : {"p4d.24xlarge", "p4de.24xlarge"}) {
    auto m = model_for(inst);
    for (int nodes : {1, 2, 4})
      for (double bytes : {8.0, 65536.0, double(1 << 30)})
        CHECK(m.estimate(CollectiveOp::AllGather, bytes, GroupLayout::make(8 * nodes, nodes)).protocol == Protocol::Simple);
    CHECK(m.estimate(CollectiveOp::AllReduce, 8, GroupLayout::make(16, 2)).time_s * 1e6 == rel_approx(164.3).epsilon(0.10));
  }
  // Other instances keep NCCL's choice (LL for small messages).
  CHECK(model_for("p5.48xlarge").estimate(CollectiveOp::AllReduce, 8, GroupLayout::make(8, 1)).protocol == Protocol::LL);
  // A tuner plugin cannot pick a protocol NCCL_PROTO leaves out (p5 at 4 nodes, 64 MiB: the region says tree LL128).
  NetworkParams p5 = NetworkParams::from_instance(HardwareCatalog::builtin().instance("p5.48xlarge"));
  CHECK(CollectiveModel(p5).estimate(CollectiveOp::AllReduce, 64.0 * (1 << 20), GroupLayout::make(32, 4)).protocol == Protocol::LL128);
  p5.protocols = {Protocol::Simple};
  CHECK(CollectiveModel(p5).estimate(CollectiveOp::AllReduce, 64.0 * (1 << 20), GroupLayout::make(32, 4)).protocol == Protocol::Simple);
  // The value reads like NCCL_PROTO: a list, any case; anything else is refused.
  CHECK(parse_nccl_proto("simple") == std::vector<Protocol>{Protocol::Simple});
  CHECK(parse_nccl_proto("LL, ll128") == std::vector<Protocol>{Protocol::LL, Protocol::LL128});
  CHECK(parse_nccl_proto("")->empty());
  CHECK(parse_nccl_proto("^LL128") == std::vector<Protocol>{Protocol::LL, Protocol::Simple});
  CHECK_FALSE(parse_nccl_proto("simpel"));
  CHECK_FALSE(parse_nccl_proto("^LL,LL128,Simple"));  // nothing left to run
  // A scenario may set its own (cluster.nccl_proto), as NCCL_PROTO in the job's environment would.
  const std::string sc = "cluster: {instance: p4d.24xlarge, nodes: 2}\nmodel: {preset: bert-10b}\n"
                         "training: {seq_len: 512, micro_batch: 1, global_batch: 16}\nstrategy: {kind: zero3}\n";
  CHECK(parse_scenario_text(sc, "<p4d>").cluster.instance.nccl_proto == "simple");
  CHECK(parse_scenario_text(sc, "<p4d>", {"cluster.nccl_proto=LL,Simple"}).cluster.instance.nccl_proto == "LL,Simple");
  CHECK_THROWS_WITH_AS(parse_scenario_text(sc, "<p4d>", {"cluster.nccl_proto=fast"}), doctest::Contains("cluster.nccl_proto"), InputError);
}

TEST_CASE("tree is chosen over ring for mid-size all_reduce on 2 nodes, and busbw then exceeds the NIC line rate") {
  auto m = model_for("p4de.24xlarge");
  auto mid = m.estimate(CollectiveOp::AllReduce, 64.0 * (1 << 20), GroupLayout::make(16, 2));
  CHECK(mid.algorithm == NcclAlgorithm::Tree);
  auto big = m.estimate(CollectiveOp::AllReduce, 2.0 * (1 << 30), GroupLayout::make(16, 2));
  CHECK(big.algorithm == NcclAlgorithm::Tree);
  CHECK(big.busbw() > 50e9);                                         // 4 x 100 Gb/s = 50 GB/s
  CHECK(big.busbw() / 1e9 == rel_approx(78.33).epsilon(0.05));  // published: 78.33 GB/s
  // At 4+ nodes the ring's busbw stays below line rate.
  auto four = m.estimate(CollectiveOp::AllReduce, 2.0 * (1 << 30), GroupLayout::make(32, 4), {NcclAlgorithm::Ring, {}});
  CHECK(four.busbw() < 50e9);
}

TEST_CASE("hierarchical all-gather moves (k-1)/k of the data across nodes, a flat ring (p-1)/p") {
  auto m = model_for("p4d.24xlarge");
  const double M = 256.0 * (1 << 20);
  // The MiCS blog example: 2 nodes x 4 GPUs (p = 8? no: p = 4 over k = 2 nodes, g = 2).
  {
    const int k = 2, g = 2, p = k * g;
    auto flat = m.estimate(CollectiveOp::AllGather, M, GroupLayout::make(p, k));
    auto h = estimate_hierarchical_allgather(m, M, k, g);
    CHECK(flat.inter_bytes_per_node / M == rel_approx(3.0 / 4.0));
    CHECK(h.inter_bytes_per_node() / M == rel_approx(1.0 / 2.0));
  }
  // p = 16 over 2 p4d nodes: 15/16 -> 1/2, and the gather is faster.
  {
    auto flat = m.estimate(CollectiveOp::AllGather, M, GroupLayout::make(16, 2));
    auto h = estimate_hierarchical_allgather(m, M, 2, 8);
    CHECK(flat.inter_bytes_per_node / M == rel_approx(15.0 / 16.0));
    CHECK(h.inter_bytes_per_node() / M == rel_approx(1.0 / 2.0));
    CHECK(h.inter.time_s + h.intra.time_s < flat.time_s);
  }
}

TEST_CASE("NIC sharing: concurrent groups on a node split its NICs") {
  // p3dn's catalog caps one GPU's host-staged path (2.6 GB/s, below the NIC's 6.9 at 8 nodes): without it
  // four one-GPU-per-node groups take four times as long as one; with it the lone group is path-bound
  // and the four, at a quarter of the NIC each (1.7 GB/s), are not.
  NetworkParams net = NetworkParams::from_instance(HardwareCatalog::builtin().instance("p3dn.24xlarge"));
  NetworkParams no_path = net;
  no_path.gpu_path_bytes_per_s = 0;
  const double S = 512.0 * (1 << 20);
  auto transfer = [&](const NetworkParams& n, int concurrent) {
    auto e = CollectiveModel(n).estimate(CollectiveOp::AllReduce, S, GroupLayout::make(8, 8, concurrent), {NcclAlgorithm::Ring, Protocol::Simple});
    return e.time_s - e.latency_s;
  };
  CHECK(transfer(no_path, 4) == rel_approx(4 * transfer(no_path, 1)));
  CHECK(transfer(net, 4) == rel_approx(transfer(no_path, 4)));
  CHECK(transfer(net, 1) == rel_approx(2 * S * 7 / 8 / 2.6e9).epsilon(0.01));
}

// Monotone in size for every algorithm and protocol, and for a picker that takes the fastest. NCCL's own
// pick is not: its model may switch to a protocol that the fabric runs slower (validation/data shows
// such steps), so only what it picks is checked against the fastest (next test).
TEST_CASE("bigger messages never take less time") {
  for (const char* inst : {"p3dn.24xlarge", "p4d.24xlarge", "p5.48xlarge", "dgx-a100-80gb", "dgx-h100"}) {
    NetworkParams net = NetworkParams::from_instance(HardwareCatalog::builtin().instance(inst));
    net.choose_fastest = true;
    const CollectiveModel m(net);
    for (auto op : {CollectiveOp::AllGather, CollectiveOp::ReduceScatter, CollectiveOp::AllReduce}) {
      for (int nodes : {1, 2, 4, 16}) {
        const GroupLayout g = GroupLayout::make(8 * nodes, nodes);
        double prev = 0;
        std::map<std::pair<NcclAlgorithm, Protocol>, double> prev_of;
        for (double b = 8; b <= 8e9; b *= 2) {
          double t = m.estimate(op, b, g).time_s;
          CHECK(t >= prev);
          prev = t;
          for (const auto& c : m.candidates(op, b, g)) {
            double& p = prev_of[{c.algorithm, c.protocol}];
            CHECK(c.time_s >= p);
            p = c.time_s;
          }
        }
      }
    }
  }
}

TEST_CASE("NCCL picks by its own model: never faster than the fastest, and a measured cost moves the time, not the pick") {
  // dgx-h100 has no tuner plugin: every pick is NCCL's.
  const InstanceSpec& inst = HardwareCatalog::builtin().instance("dgx-h100");
  NetworkParams net = NetworkParams::from_instance(inst);
  NetworkParams fastest = net;
  fastest.choose_fastest = true;
  NetworkParams measured_otherwise = net;
  measured_otherwise.intra_efficiency = 0.6;
  measured_otherwise.intra_latency_scale = 3;
  measured_otherwise.intra_ramp_min = 0.2, measured_otherwise.intra_ramp_half_bytes = 4e6;
  measured_otherwise.inter_efficiency = 0.4, measured_otherwise.inter_efficiency_at_scale = 0.3;
  measured_otherwise.inter_ramp_min = 0.1, measured_otherwise.inter_ramp_half_bytes = 2e6;
  measured_otherwise.inter_latency_s = 40e-6, measured_otherwise.inter_fixed_latency_s = 30e-6;
  measured_otherwise.inter_ll128_efficiency = 0.4, measured_otherwise.inter_tree_efficiency = 0.5;
  measured_otherwise.nvls_efficiency = 0.3;
  measured_otherwise.call_overhead_s = 50e-6;
  int differ = 0;
  for (auto op : {CollectiveOp::AllGather, CollectiveOp::AllReduce})
    for (int nodes : {1, 2, 4, 16})
      for (double b = 8; b <= 8e9; b *= 4) {
        const GroupLayout g = GroupLayout::make(8 * nodes, nodes);
        const auto picked = CollectiveModel(net).estimate(op, b, g), best = CollectiveModel(fastest).estimate(op, b, g);
        CHECK(picked.time_s >= best.time_s * (1 - 1e-12));
        // NCCL knows nothing the fabric was measured to deliver: a network calibrated very differently gets
        // the same pick (every measured term changed at once; a term the pick still read would move it).
        const auto remeasured = CollectiveModel(measured_otherwise).estimate(op, b, g);
        CHECK(remeasured.algorithm == picked.algorithm);
        CHECK(remeasured.protocol == picked.protocol);
        differ += picked.algorithm != best.algorithm || picked.protocol != best.protocol;
      }
  CHECK(differ > 0);  // the catalog's measured terms do make NCCL mispick somewhere

  // A fabric measured to deliver LL128 at half its rate: NCCL still picks LL128 where it did (its tables do
  // not know), and that collective takes longer; a picker that knew would leave LL128.
  const GroupLayout g = GroupLayout::make(32, 4);
  const double S = 128.0 * (1 << 20);
  const auto before = CollectiveModel(net).estimate(CollectiveOp::AllGather, S, g);
  REQUIRE(before.protocol == Protocol::LL128);
  NetworkParams slow = net;
  slow.inter_ll128_efficiency = 0.5;
  const auto after = CollectiveModel(slow).estimate(CollectiveOp::AllGather, S, g);
  CHECK(after.protocol == Protocol::LL128);
  CHECK(after.algorithm == before.algorithm);
  CHECK(after.time_s > before.time_s * 1.3);
  slow.choose_fastest = true;
  CHECK(CollectiveModel(slow).estimate(CollectiveOp::AllGather, S, g).protocol != Protocol::LL128);
}

TEST_CASE("a fabric's ll128 key decides whether LL128 runs across nodes, inside a node it always may") {
  auto uses_ll128 = [](const InstanceSpec& inst, int nodes) {
    for (const auto& c : CollectiveModel(NetworkParams::from_instance(inst))
                             .candidates(CollectiveOp::AllReduce, 64.0 * (1 << 20), GroupLayout::make(8 * nodes, nodes)))
      if (c.protocol == Protocol::LL128) return true;
    return false;
  };
  const auto& catalog = HardwareCatalog::builtin();
  CHECK_FALSE(uses_ll128(catalog.instance("p5.48xlarge"), 4));   // efa-v2: ll128: false
  CHECK_FALSE(uses_ll128(catalog.instance("p4d.24xlarge"), 4));  // efa-p4
  CHECK(uses_ll128(catalog.instance("p5.48xlarge"), 1));         // NVLink only
  InstanceSpec ordered = catalog.instance("p5.48xlarge");
  ordered.network.fabric.ll128 = true;
  CHECK(uses_ll128(ordered, 4));
}

TEST_CASE("a ring across nodes pays its NVLink ramp's shortfall or its latency sum, whichever is larger, not both") {
  // The NVLink ramp is measured on one-node rings, where NCCL's latency sum is a few microseconds;
  // across nodes each ring step also waits for the hops that the latency charges (ring.cpp).
  NetworkParams net = NetworkParams::from_instance(HardwareCatalog::builtin().instance("p5.48xlarge"));
  net.inter_ramp_min = 1.0;  // network ramp off: only the NVLink one is in question
  net.intra_ramp_min = 0.5;
  net.intra_ramp_half_bytes = 16.0 * (1 << 20);
  NetworkParams flat = net;
  flat.intra_ramp_min = 1.0;  // no NVLink ramp at all
  const auto op = CollectiveOp::AllGather;
  const auto proto = Protocol::Simple;
  // One node: the ramp's whole shortfall is charged (the ramp is all of the per-step cost there).
  {
    const auto g = GroupLayout::make(8, 1);
    const double S = 64.0 * (1 << 20);
    auto ramped = *estimate_ring(net, op, S, g, proto), plain = *estimate_ring(flat, op, S, g, proto);
    const double step = S / 8, eff = 0.5 + 0.5 * step / (step + 16.0 * (1 << 20));
    CHECK(ramped.latency_s == rel_approx(plain.latency_s));
    CHECK(ramped.time_s - ramped.latency_s == rel_approx((plain.time_s - plain.latency_s) / eff).epsilon(1e-9));
  }
  // 32 nodes, 1 GiB: 255 steps whose latency sum (~2.5 ms) exceeds the shortfall, so the ramp adds nothing.
  {
    const auto g = GroupLayout::make(256, 32);
    const double S = double(1 << 30);
    auto ramped = *estimate_ring(net, op, S, g, proto), plain = *estimate_ring(flat, op, S, g, proto);
    const double eff16 = 0.5 + 0.5 * (S / 256) / (S / 256 + 16.0 * (1 << 20));
    const double shortfall = std::max(plain.intra_time_s / eff16, plain.inter_time_s) - std::max(plain.intra_time_s, plain.inter_time_s);
    REQUIRE(shortfall > 0);
    REQUIRE(shortfall < ramped.latency_s - net.call_overhead_s);
    CHECK(ramped.time_s == rel_approx(plain.time_s).epsilon(1e-12));
    // Past the latency sum the rest of the shortfall is charged: a deeper, slower ramp shows again.
    NetworkParams slow = net;
    slow.intra_ramp_min = 0.2;
    slow.intra_ramp_half_bytes *= 64;
    auto s = *estimate_ring(slow, op, S, g, proto);
    const double eff = 0.2 + 0.8 * (S / 256) / (S / 256 + slow.intra_ramp_half_bytes);
    // Simple: the slower tier sets the transfer (the ramp slows the NVLink one only).
    const double big_shortfall = std::max(plain.intra_time_s / eff, plain.inter_time_s) - std::max(plain.intra_time_s, plain.inter_time_s);
    const double latency_sum = s.latency_s - net.call_overhead_s;
    REQUIRE(big_shortfall > latency_sum);
    CHECK(s.time_s == rel_approx(plain.time_s + big_shortfall - latency_sum).epsilon(1e-9));
    // The engines' split stays exact: time = latency + the slower tier.
    CHECK(s.time_s == rel_approx(s.latency_s + std::max(s.intra_time_s, s.inter_time_s)).epsilon(1e-12));
  }
}

TEST_CASE("one rank per node: every ring step pays NCCL's tree network hop (tuning.cc since v2.23)") {
  // NCCL: "With ppn=1 latencies are fully exposed, use the Tree network latency": hwLat[NET][Tree][p]
  // (LL 5.0, LL128 8.5 us) replaces the ring's (2.7, 4.0 us); Simple is 14 us either way.
  NetworkParams net = NetworkParams::from_instance(HardwareCatalog::builtin().instance("dgx-h100"));
  net.call_overhead_s = 0;
  net.inter_fixed_latency_s = 0;
  net.intra_latency_scale = 1.0;
  const double L = net.inter_latency_s;
  const auto op = CollectiveOp::AllGather;
  const int k = 16;
  auto one = *estimate_ring(net, op, 4096, GroupLayout::make(k, k), Protocol::LL);
  // all_gather on 16 nodes x 1 rank: 15 steps, all across the network.
  CHECK(one.latency_s == rel_approx(6.6e-6 + 15 * (5.0e-6 + L)).epsilon(1e-9));
  auto one128 = *estimate_ring(net, op, 4096, GroupLayout::make(k, k), Protocol::LL128);
  CHECK(one128.latency_s == rel_approx(14.0e-6 + 15 * (8.5e-6 + L)).epsilon(1e-9));
  // Two ranks per node keep the ring's hop: 31 steps, 15 across the network at 2.7 us + L, the other 16
  // on NVLink at NCCL's 1 us network overhead (above NVLink's 0.6 us LL hop).
  auto two = *estimate_ring(net, op, 4096, GroupLayout::make(2 * k, k), Protocol::LL);
  CHECK(two.latency_s == rel_approx(6.6e-6 + 16 * 1.0e-6 + 15 * (2.7e-6 + L)).epsilon(1e-9));
  // Simple has the same hop either way.
  auto simple = *estimate_ring(net, op, 4096, GroupLayout::make(k, k), Protocol::Simple);
  CHECK(simple.latency_s == rel_approx(8.4e-6 + 15 * (14.0e-6 + 2 * L)).epsilon(1e-9));
}

TEST_CASE("NCCL's LL cap across nodes follows the hosts' CPU, one node the GPU (tuning.cc llMaxBws)") {
  // A ring LL all_gather on links made 100x faster, so that NCCL's cap on LL's bus bandwidth is what binds:
  // the transfer then takes volume / cap, and the bus bandwidth it shows is the table's entry.
  InstanceSpec inst = HardwareCatalog::builtin().instance("dgx-h100");
  auto ll_busbw = [&](const std::string& cpu, int nodes) {
    InstanceSpec i = inst;
    i.cpu = cpu;
    NetworkParams net = NetworkParams::from_instance(i);
    net.inter_node_bytes_per_s *= 100;  // make the links fast, so the cap is what binds
    net.intra_bytes_per_s *= 100;
    const auto e = CollectiveModel(net).estimate(CollectiveOp::AllGather, 8.0 * (1 << 30), GroupLayout::make(8 * nodes, nodes),
                                                 {NcclAlgorithm::Ring, Protocol::LL});
    return busbw_factor(CollectiveOp::AllGather, 8 * nodes) * e.bytes / (e.time_s - e.latency_s) / 1e9;
  };
  CHECK(ll_busbw("intel", 2) == rel_approx(39.0).epsilon(1e-3));
  CHECK(ll_busbw("intel", 4) == rel_approx(20.4).epsilon(1e-3));
  CHECK(ll_busbw("amd", 2) == rel_approx(22.5).epsilon(1e-3));
  CHECK(ll_busbw("amd", 16) == rel_approx(19.0).epsilon(1e-3));
  CHECK(ll_busbw("amd", 1) == rel_approx(141.0).epsilon(1e-3));  // one node: the Hopper row, whatever the CPU
  CHECK(HardwareCatalog::builtin().instance("p5.48xlarge").cpu == "amd");
  CHECK(HardwareCatalog::builtin().instance("dgx-h100").cpu == "intel");
}

TEST_CASE("the latency a net plugin reports steers NCCL's pick, never what an algorithm costs") {
  InstanceSpec quiet = HardwareCatalog::builtin().instance("dgx-h100"), loud = quiet;
  loud.network.fabric.nccl_net_latency_s = 75e-6;  // what aws-ofi-nccl reports on p5
  const CollectiveModel a(NetworkParams::from_instance(quiet)), b(NetworkParams::from_instance(loud));
  int moved = 0;
  for (int nodes : {2, 4, 16})
    for (double bytes = 1 << 10; bytes <= double(1 << 30); bytes *= 8) {
      const GroupLayout g = GroupLayout::make(8 * nodes, nodes);
      const auto ca = a.candidates(CollectiveOp::AllReduce, bytes, g), cb = b.candidates(CollectiveOp::AllReduce, bytes, g);
      REQUIRE(ca.size() == cb.size());
      for (size_t i = 0; i < ca.size(); ++i) CHECK(ca[i].time_s == cb[i].time_s);
      const auto pa = a.estimate(CollectiveOp::AllReduce, bytes, g), pb = b.estimate(CollectiveOp::AllReduce, bytes, g);
      moved += pa.algorithm != pb.algorithm || pa.protocol != pb.protocol;
    }
  CHECK(moved > 0);  // a high reported latency makes NCCL prefer fewer network hops somewhere
  // A cluster's own plugin setting (OFI_NCCL_NET_LATENCY, another plugin release) is a calibration key; the file
  // round-trips it and it picks what the fabric key picks.
  const Calibration cal = parse_calibration("instance: dgx-h100\nnetwork:\n  nccl_net_latency_us: 75\n", "<cal>");
  REQUIRE(cal.nccl_net_latency_s.has_value());
  CHECK(*parse_calibration(cal.to_yaml(), "<again>").nccl_net_latency_s == rel_approx(75e-6));
  NetworkParams calibrated = NetworkParams::from_instance(quiet);
  cal.apply(calibrated);
  for (double bytes = 1 << 10; bytes <= double(1 << 30); bytes *= 8) {
    const GroupLayout g = GroupLayout::make(32, 4);
    const auto pc = CollectiveModel(calibrated).estimate(CollectiveOp::AllReduce, bytes, g), pb = b.estimate(CollectiveOp::AllReduce, bytes, g);
    CHECK(pc.algorithm == pb.algorithm);
    CHECK(pc.protocol == pb.protocol);
  }
}
