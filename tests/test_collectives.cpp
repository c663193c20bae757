// The collective library against NCCL's worked checks and published nccl-tests figures
// (docs/reference/nccl-and-compute.md §3.4, validation/data/nccl-tests/).
#include <doctest/doctest.h>

#include "models/collective/collective.hpp"
#include "models/hardware/catalog.hpp"

using namespace micsim;

static CollectiveModel model_for(const char* instance) {
  return CollectiveModel(NetworkParams::from_instance(HardwareCatalog::builtin().instance(instance)));
}

TEST_CASE("8 A100 on NVSwitch: large all_reduce busbw near 230 GB/s, small all_reduce near 15 us") {
  auto m = model_for("p4d.24xlarge");
  auto big = m.estimate(CollectiveOp::AllReduce, double(1 << 30), GroupLayout::make(8, 1));
  CHECK(big.busbw() / 1e9 == doctest::Approx(230.77).epsilon(0.03));  // NVIDIA/nccl#527: 230.77 GB/s
  auto small = m.estimate(CollectiveOp::AllReduce, 8, GroupLayout::make(8, 1));
  CHECK(small.time_s * 1e6 == doctest::Approx(15.0).epsilon(0.05));   // Ring LL: 6.6 + 14 x 0.6
  CHECK(small.protocol == Protocol::LL);
}

TEST_CASE("tree is chosen over ring for mid-size all_reduce on 2 nodes, and busbw then exceeds the NIC line rate") {
  auto m = model_for("p4de.24xlarge");
  auto mid = m.estimate(CollectiveOp::AllReduce, 64.0 * (1 << 20), GroupLayout::make(16, 2));
  CHECK(mid.algorithm == NcclAlgorithm::Tree);
  auto big = m.estimate(CollectiveOp::AllReduce, 2.0 * (1 << 30), GroupLayout::make(16, 2));
  CHECK(big.algorithm == NcclAlgorithm::Tree);
  CHECK(big.busbw() > 50e9);                                         // 4 x 100 Gb/s = 50 GB/s
  CHECK(big.busbw() / 1e9 == doctest::Approx(78.33).epsilon(0.05));  // published: 78.33 GB/s
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
    CHECK(flat.inter_bytes_per_node / M == doctest::Approx(3.0 / 4.0));
    CHECK(h.inter_bytes_per_node() / M == doctest::Approx(1.0 / 2.0));
  }
  // p = 16 over 2 p4d nodes: 15/16 -> 1/2, and the gather is faster.
  {
    auto flat = m.estimate(CollectiveOp::AllGather, M, GroupLayout::make(16, 2));
    auto h = estimate_hierarchical_allgather(m, M, 2, 8);
    CHECK(flat.inter_bytes_per_node / M == doctest::Approx(15.0 / 16.0));
    CHECK(h.inter_bytes_per_node() / M == doctest::Approx(1.0 / 2.0));
    CHECK(h.inter.time_s + h.intra.time_s < flat.time_s);
  }
}

TEST_CASE("NIC sharing: concurrent groups on a node split its NICs") {
  auto m = model_for("p3dn.24xlarge");
  const double S = 512.0 * (1 << 20);
  auto alone = m.estimate(CollectiveOp::AllReduce, S, GroupLayout::make(8, 8, 1), {NcclAlgorithm::Ring, Protocol::Simple});
  auto shared = m.estimate(CollectiveOp::AllReduce, S, GroupLayout::make(8, 8, 4), {NcclAlgorithm::Ring, Protocol::Simple});
  CHECK((shared.time_s - shared.latency_s) == doctest::Approx(4 * (alone.time_s - alone.latency_s)));
}

TEST_CASE("bigger messages never take less time, more bandwidth never takes more") {
  for (const char* inst : {"p3dn.24xlarge", "p4d.24xlarge", "p5.48xlarge", "dgx-a100-80gb"}) {
    auto m = model_for(inst);
    for (auto op : {CollectiveOp::AllGather, CollectiveOp::ReduceScatter, CollectiveOp::AllReduce}) {
      for (int nodes : {1, 2, 4, 16}) {
        double prev = 0;
        for (double b = 8; b <= 8e9; b *= 2) {
          double t = m.estimate(op, b, GroupLayout::make(8 * nodes, nodes)).time_s;
          CHECK(t >= prev);
          prev = t;
        }
      }
    }
  }
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
