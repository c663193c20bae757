// Whole-step behaviour: memory verdicts, invariants between strategies, and the MiCS paper's shape.
#include <doctest/doctest.h>

#include "helpers.hpp"

using namespace micsim;
using micsim::test::run;
using micsim::test::scenario;

TEST_CASE("fits_in_memory: BERT-10B under DDP does not fit a 32 GB V100, ZeRO-3 on 16 of them does") {
  auto ddp = run(scenario("p3dn.24xlarge", 2, "bert-10b", "ddp", 8, 128));
  CHECK_FALSE(ddp.memory.fits);
  CHECK(ddp.memory.model_states_bytes == rel_approx(16.0 * ddp.params));  // 161 GB of states alone
  auto z3 = run(scenario("p3dn.24xlarge", 2, "bert-10b", "zero3", 8, 128));
  CHECK(z3.memory.fits);
  CHECK(z3.memory.model_states_bytes == rel_approx(16.0 * z3.params / 16));
  // MiCS with p = 8 holds twice ZeRO-3's states on 16 GPUs and still fits (the MiCS paper's setting).
  auto mics = run(scenario("p3dn.24xlarge", 2, "bert-10b", "mics", 8, 128, {"strategy.partition_size=8"}));
  CHECK(mics.memory.fits);
  CHECK(mics.memory.model_states_bytes == rel_approx(2 * z3.memory.model_states_bytes));
  // Without checkpointing the activations of 127 layers at micro-batch 8 do not fit.
  auto nockpt = run(scenario("p3dn.24xlarge", 2, "bert-10b", "zero3", 8, 128, {"training.activation_checkpointing=false"}));
  CHECK_FALSE(nockpt.memory.fits);
}

TEST_CASE("gpus_to_fit: ZeRO-3 on that many GPUs fits, on a node fewer it does not") {
  auto small = run(scenario("p4d.24xlarge", 2, "gpt-175b", "zero3", 1, 64, {}, 2048));
  CHECK_FALSE(small.memory.fits);
  const int64_t need = small.memory.gpus_to_fit;
  REQUIRE(need > 16);
  const int nodes = int((need + 7) / 8);
  auto enough = run(scenario("p4d.24xlarge", nodes, "gpt-175b", "zero3", 1, 8 * nodes, {}, 2048));
  CHECK(enough.memory.fits);
  CHECK(enough.memory.gpus_to_fit == need);  // a property of the model and the step, not of the cluster
  if (nodes > 1) CHECK_FALSE(run(scenario("p4d.24xlarge", nodes - 1, "gpt-175b", "zero3", 1, 8 * (nodes - 1), {}, 2048)).memory.fits);
}

TEST_CASE("MiCS with p = N equals ZeRO-3") {
  for (int nodes : {2, 4, 8}) {
    const int n = nodes * 8;
    auto z3 = run(scenario("p4d.24xlarge", nodes, "bert-10b", "zero3", 8, 8 * n * 2));
    auto mics = run(scenario("p4d.24xlarge", nodes, "bert-10b", "mics", 8, 8 * n * 2,
                             {"strategy.partition_size=" + std::to_string(n), "strategy.hierarchical_allgather=false"}));
    CHECK(mics.iteration_time_s == rel_approx(z3.iteration_time_s).epsilon(0.001));
    CHECK(mics.memory.peak_bytes == rel_approx(z3.memory.peak_bytes).epsilon(0.001));
  }
}

TEST_CASE("doubling NIC bandwidth never makes a step slower") {
  const std::string base_inst =
      "{gpu: A100-SXM4-40GB, gpus_per_node: 8, intra_node: {gbytes_per_s: 240}, network: {nics: 4, gbits_per_nic: ";
  for (const char* kind : {"ddp", "zero1", "zero2", "zero3", "mics", "hsdp"}) {
    for (int nodes : {2, 4, 16}) {
      for (int64_t mb : {1, 4}) {
        double prev = 1e30;
        for (int gbits : {25, 50, 100, 200, 400, 800}) {
          std::string inst = base_inst + std::to_string(gbits) + ", fabric: efa-p4}}";
          auto sc = scenario(inst, nodes, "gpt2-10b", kind, mb, mb * nodes * 8 * 2, {}, 512);
          double t = run(sc).iteration_time_s;
          CHECK_MESSAGE(t <= prev * (1 + 1e-9), kind << " nodes=" << nodes << " mb=" << mb << " " << gbits << " Gb/s");
          prev = t;
        }
      }
    }
  }
}

TEST_CASE("more GPUs at fixed per-GPU batch never lower total throughput under MiCS with p inside a node") {
  for (const char* inst : {"p3dn.24xlarge", "p4d.24xlarge", "p5.48xlarge"}) {
    for (int p : {4, 8}) {
      double prev = 0;
      for (int nodes : {1, 2, 4, 8, 16, 32, 64}) {
        auto r = run(scenario(inst, nodes, "bert-10b", "mics", 8, 8 * 8 * nodes * 4, {"strategy.partition_size=" + std::to_string(p)}));
        CHECK_MESSAGE(r.samples_per_s >= prev, inst << " p=" << p << " nodes=" << nodes);
        prev = r.samples_per_s;
      }
    }
  }
}

TEST_CASE("the MiCS paper's headline shape: BERT-10B on p3dn, 16 to 128 GPUs") {
  // Weak scaling: micro-batch 8, 8 micro-steps per step (the 8192-sequence config at 128 GPUs).
  double base_mics = 0, base_z3 = 0, last_mics = 0, last_z3 = 0;
  for (int nodes : {2, 4, 8, 16}) {
    const int64_t gb = 8 * 8 * nodes * 8;
    auto mics = run(scenario("p3dn.24xlarge", nodes, "bert-10b", "mics", 8, gb, {"strategy.partition_size=8"}));
    auto z3 = run(scenario("p3dn.24xlarge", nodes, "bert-10b", "zero3", 8, gb));
    CHECK(mics.memory.fits);
    CHECK(z3.memory.fits);
    double pm = mics.samples_per_s / mics.world_size, pz = z3.samples_per_s / z3.world_size;
    if (nodes == 2) base_mics = pm, base_z3 = pz;
    last_mics = pm, last_z3 = pz;
    CHECK(mics.samples_per_s > z3.samples_per_s);
  }
  const double eff_mics = last_mics / base_mics, eff_z3 = last_z3 / base_z3;
  CHECK(eff_mics >= 0.90);           // near-linear
  // ZeRO-3 does not scale on 100 Gb/s EFA. Framework ideal here (DeepSpeed 2021's ZeRO-3, which the
  // paper ran, scales worse: tests/test_frameworks.cpp). 0.72 until 2026-12-06, 0.85 since the 2019 EFA
  // fabric's two-node ring runs at its measured 7.5 GB/s (0.60 of the NIC, NVIDIA/nccl-tests#22) rather than
  // 10 GB/s: the 2-node base is slower, the 16-node point is nearly where it was.
  CHECK(eff_z3 <= 0.90);
  const double ratio = last_mics / last_z3;
  CHECK(ratio > 1.3);
  CHECK(ratio <= 2.89);              // the paper's "up to 2.89x"
  // The paper: scaling efficiency up to 1.27x DeepSpeed's (DeepSpeed 2021's profile: 1.27x, test_frameworks.cpp).
  // The ideal framework gives 1.12x here (1.32x before the 2-node ring fix above); the band catches a model
  // that drifts far from it.
  CHECK(eff_mics / eff_z3 >= 1.1);
  CHECK(eff_mics / eff_z3 <= 1.5);
}

TEST_CASE("step time breakdown adds up and JSON carries the contract fields") {
  auto r = run(scenario("p4d.24xlarge", 4, "llama2-7b", "mics", 2, 2 * 32 * 4, {"strategy.partition_size=8"}, 2048));
  CHECK(r.compute_s + r.exposed_comm_s + r.idle_s == rel_approx(r.iteration_time_s));
  CHECK(r.grad_accumulation_steps == 4);
  auto j = to_json(r);
  for (const char* key : {"iteration_time_s", "samples_per_s", "tokens_per_s", "tflops_per_gpu", "hw_tflops_per_gpu",
                          "mfu", "hfu", "fits_in_memory", "memory", "breakdown", "engine", "world_size", "partition_size",
                          "grad_accumulation_steps"})
    CHECK_MESSAGE(j.contains(key), key);
  for (const char* key : {"peak_bytes_per_gpu", "model_states_bytes", "activations_bytes", "buffers_bytes"})
    CHECK(j["memory"].contains(key));
  for (const char* key : {"compute_s", "exposed_comm_s", "idle_s"}) CHECK(j["breakdown"].contains(key));
  CHECK(j["tokens_per_s"].get<double>() == rel_approx(j["samples_per_s"].get<double>() * 2048));
  CHECK(j["mfu"].get<double>() == rel_approx(j["tflops_per_gpu"].get<double>() / 312.0));
}
