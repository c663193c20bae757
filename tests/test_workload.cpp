// FLOPs and activations against their closed forms.
#include <doctest/doctest.h>

#include "models/memory/memory_model.hpp"
#include "models/workload/workload.hpp"

using namespace micsim;

TEST_CASE("op-level FLOPs of a micro-step equal 6·N·T plus the attention term") {
  for (const char* name : {"bert-10b", "gpt2-10b", "llama2-7b", "llama2-70b", "gpt-175b"}) {
    const ModelSpec& m = *find_model_preset(name);
    WorkloadOptions o;
    o.micro_batch = 4;
    o.seq_len = 1024 > m.max_position && m.max_position > 0 ? m.max_position : 1024;
    Workload w = build_workload(m, o);
    const double T = double(o.micro_batch * o.seq_len);
    const double attention = 12.0 * m.layers * double(m.hidden) * double(o.seq_len) * T;  // fwd+bwd, PaLM
    const double gemm_params = double(w.params.matmul_total());
    // Exact: the schedule's GEMMs are 2 FLOPs per weight per token forward, 4 backward.
    CHECK(w.forward_flops() + w.backward_flops() == doctest::Approx(6.0 * gemm_params * T + attention).epsilon(1e-12));
    // The reported convention uses all parameters N: GEMM weights are within 2 % of N for these models.
    CHECK(gemm_params / double(w.params.total) == doctest::Approx(1.0).epsilon(0.02));
    // With recompute the hardware does one more forward: 8·N·T + 16·L·h·s·T.
    const ParamCounts& p = w.params;
    CHECK(hardware_flops_per_token(m, p, o.seq_len, Checkpointing::Full) ==
          doctest::Approx(8.0 * p.total + 16.0 * m.layers * m.hidden * double(o.seq_len)));
    CHECK(model_flops_per_token(m, p, o.seq_len) == doctest::Approx(6.0 * p.total + 12.0 * m.layers * m.hidden * double(o.seq_len)));
  }
}

TEST_CASE("block activations reduce to Korthikanti's 34·sbh + 5·a·s²·b for a GPT block") {
  ModelSpec m = *find_model_preset("gpt-175b");  // ffn = 4h, kv_heads = heads, dropout
  const int64_t s = 2048, b = 1;
  const double h = double(m.hidden), a = m.heads;
  double expected = s * b * h * (34.0 + 5.0 * a * s / h);
  CHECK(block_activation_bytes(m, b, s, Precision::FP16, false) == doctest::Approx(expected));
  // Fused attention drops the s² terms and keeps the fp32 log-sum-exp per row.
  CHECK(block_activation_bytes(m, b, s, Precision::FP16, true) == doctest::Approx(34.0 * s * b * h + 4.0 * a * s * b));
}

TEST_CASE("model states follow (2+2+12)·Ψ/shard for mixed-precision Adam") {
  const ModelSpec& m = *find_model_preset("bert-10b");
  WorkloadOptions o;
  o.micro_batch = 8;
  o.seq_len = 512;
  Workload w = build_workload(m, o);
  for (int shards : {1, 8, 16, 128}) {
    ShardingSpec s;
    s.param_shards = s.grad_shards = s.optimizer_shards = shards;
    auto e = estimate_memory(w, s, {Checkpointing::Full, 1, false}, Optimizer::Adam, 32.0 * (1 << 30));
    CHECK(e.model_states_bytes == doctest::Approx(16.0 * w.params.total / shards));
  }
  CHECK(optimizer_bytes_per_param(Optimizer::Adam, Precision::FP32) == 8.0);
  CHECK(optimizer_bytes_per_param(Optimizer::Lamb, Precision::BF16) == 12.0);
  CHECK(optimizer_bytes_per_param(Optimizer::Sgd, Precision::FP16) == 8.0);
}
