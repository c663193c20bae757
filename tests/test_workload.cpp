// FLOPs and activations against their closed forms.
#include <doctest/doctest.h>

#include "approx.hpp"
#include <algorithm>

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
    CHECK(w.forward_flops() + w.backward_flops() == rel_approx(6.0 * gemm_params * T + attention).epsilon(1e-12));
    // The reported convention uses all parameters N: GEMM weights are within 2 % of N for these models.
    CHECK(gemm_params / double(w.params.total) == rel_approx(1.0).epsilon(0.02));
    // With recompute the hardware does one more forward: 8·N·T + 16·L·h·s·T.
    const ParamCounts& p = w.params;
    CHECK(hardware_flops_per_token(m, p, o.seq_len, Checkpointing::Full) ==
          rel_approx(8.0 * p.total + 16.0 * m.layers * m.hidden * double(o.seq_len)));
    CHECK(model_flops_per_token(m, p, o.seq_len) == rel_approx(6.0 * p.total + 12.0 * m.layers * m.hidden * double(o.seq_len)));
  }
}

TEST_CASE("block activations reduce to Korthikanti's 34·sbh + 5·a·s²·b for a GPT block") {
  ModelSpec m = *find_model_preset("gpt-175b");  // ffn = 4h, kv_heads = heads, dropout
  const int64_t s = 2048, b = 1;
  const double h = double(m.hidden), a = m.heads;
  double expected = s * b * h * (34.0 + 5.0 * a * s / h);
  CHECK(block_activation_bytes(m, b, s, Precision::FP16, false) == rel_approx(expected));
  // Fused attention drops the s² terms and keeps the fp32 log-sum-exp per row.
  CHECK(block_activation_bytes(m, b, s, Precision::FP16, true) == rel_approx(34.0 * s * b * h + 4.0 * a * s * b));
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
    CHECK(e.model_states_bytes == rel_approx(16.0 * w.params.total / shards));
  }
  CHECK(optimizer_bytes_per_param(Optimizer::Adam, Precision::FP32) == 8.0);
  CHECK(optimizer_bytes_per_param(Optimizer::Lamb, Precision::BF16) == 12.0);
  CHECK(optimizer_bytes_per_param(Optimizer::Sgd, Precision::FP16) == 8.0);
}

TEST_CASE("the loss holds what its cross-entropy allocates per logit") {
  // Megatron-LM: logits + one fp32 copy, softmax and gradient in place.
  CHECK(loss_bytes_per_logit(CrossEntropy::Fused, Precision::BF16, false) == 6.0);
  CHECK(loss_bytes_per_logit(CrossEntropy::Fused, Precision::BF16, true) == 6.0);
  // F.cross_entropy(logits.float()): three fp32 tensors in its backward; DTensor loss parallel four.
  CHECK(loss_bytes_per_logit(CrossEntropy::Torch, Precision::BF16, false) == 12.0);
  CHECK(loss_bytes_per_logit(CrossEntropy::Torch, Precision::BF16, true) == 16.0);
  CHECK(loss_bytes_per_logit(CrossEntropy::Torch, Precision::FP32, false) == 12.0);  // no copy, same backward
  // Compiled: the 16-bit logits kept for the backward and the 16-bit gradient; fp32 stays in registers.
  CHECK(loss_bytes_per_logit(CrossEntropy::Compiled, Precision::BF16, false) == 4.0);

  // In the estimate the difference is exactly (s·b·V/tp) x the difference per logit.
  const ModelSpec& m = *find_model_preset("llama3-8b");
  WorkloadOptions o;
  o.micro_batch = 2, o.seq_len = 8192, o.precision = Precision::BF16, o.flash_attention = true;
  Workload w = build_workload(m, o);
  ShardingSpec s;
  ActivationOptions fused{Checkpointing::None, 1, true}, torch = fused;
  torch.cross_entropy = CrossEntropy::Torch;
  const double logits = double(o.micro_batch * o.seq_len) * double(m.vocab);
  CHECK(estimate_memory(w, s, torch, Optimizer::Adam, 80e9).activations_bytes -
            estimate_memory(w, s, fused, Optimizer::Adam, 80e9).activations_bytes ==
        rel_approx(6.0 * logits));
}

TEST_CASE("the caching allocator keeps the eager loss's freed 16-bit logits reserved") {
  // torchtitan's train step (9dec370): pred (2 B/logit), pred.float() (4), log_softmax's output (4, saved);
  // the copy is freed after the forward, pred by `del pred`: 6 free bytes per logit before the backward
  // allocates nll_loss's gradient (4, fits) and log_softmax_backward's output (4, does not fit in the 2
  // left): reserved 2 + 4 + 4 + 4 = 14 = the allocated peak 12 + the logits' 2. DTensor loss parallel:
  // 14 reserved after the forward, 10 free, three 4-byte tensors in the backward: 18 = 16 + 2.
  CHECK(loss_cached_bytes_per_logit(CrossEntropy::Torch, Precision::BF16) == 2.0);
  CHECK(loss_cached_bytes_per_logit(CrossEntropy::Torch, Precision::FP32) == 0.0);  // the freed block fits fp32
  CHECK(loss_cached_bytes_per_logit(CrossEntropy::Fused, Precision::BF16) == 0.0);   // in place, nothing freed
  CHECK(loss_cached_bytes_per_logit(CrossEntropy::Compiled, Precision::BF16) == 0.0);

  const ModelSpec& m = *find_model_preset("llama3-8b");
  WorkloadOptions o;
  o.micro_batch = 2, o.seq_len = 8192, o.precision = Precision::BF16, o.flash_attention = true;
  const Workload w = build_workload(m, o);
  ShardingSpec s;  // sharded over 8 (FSDP): the optimizer's fp32 gradient copy is not the peak
  s.param_shards = s.grad_shards = s.optimizer_shards = 8;
  const double logits = double(o.micro_batch * o.seq_len) * double(m.vocab);
  ActivationOptions a{Checkpointing::Full, 1, true};
  for (CrossEntropy ce : {CrossEntropy::Fused, CrossEntropy::Torch, CrossEntropy::Compiled}) {
    a.cross_entropy = ce;
    CAPTURE(to_string(ce));
    const MemoryEstimate e = estimate_memory(w, s, a, Optimizer::Adam, 80e9);
    // The loss is this step's peak (full checkpointing, 2 x 8192 tokens x 128k vocabulary), so the
    // reserved peak is the allocated one plus exactly the cached block.
    CHECK(e.allocator_reserved_bytes - e.peak_bytes == rel_approx(logits * loss_cached_bytes_per_logit(ce, Precision::BF16)));
  }
  // Compiling the loss saves 8 bytes per logit allocated, 10 reserved.
  a.cross_entropy = CrossEntropy::Torch;
  const MemoryEstimate eager = estimate_memory(w, s, a, Optimizer::Adam, 80e9);
  a.cross_entropy = CrossEntropy::Compiled;
  const MemoryEstimate compiled = estimate_memory(w, s, a, Optimizer::Adam, 80e9);
  CHECK(eager.peak_bytes - compiled.peak_bytes == rel_approx(8.0 * logits));
  CHECK(eager.allocator_reserved_bytes - compiled.allocator_reserved_bytes == rel_approx(10.0 * logits));
  // Without checkpointing the loss still tops every block's stored activations: the same extra block.
  a = ActivationOptions{Checkpointing::None, 1, true};
  a.cross_entropy = CrossEntropy::Torch;
  o.micro_batch = 1, o.seq_len = 2048;
  const MemoryEstimate small = estimate_memory(build_workload(m, o), s, a, Optimizer::Adam, 80e9);
  CHECK(small.allocator_reserved_bytes == rel_approx(small.peak_bytes + 2.0 * 2048 * double(m.vocab)));
}

TEST_CASE("the loss reads and writes what its cross-entropy's kernels touch per logit") {
  // Fused: logits read, fp32 softmax written and read; backward twice that (the model before the key).
  LossTraffic f = loss_traffic_per_logit(CrossEntropy::Fused, Precision::BF16, false);
  CHECK(f.forward == 10.0);
  CHECK(f.backward == 20.0);
  // F.cross_entropy(logits.float()): cast 2+4, log_softmax 4+4; backward 4 + (4+4+4) + (4+2).
  LossTraffic t = loss_traffic_per_logit(CrossEntropy::Torch, Precision::BF16, false);
  CHECK(t.forward == 14.0);
  CHECK(t.backward == 22.0);
  LossTraffic tp = loss_traffic_per_logit(CrossEntropy::Torch, Precision::BF16, true);
  CHECK(tp.forward == 30.0);
  CHECK(tp.backward == 34.0);
  // In the workload the head's traffic differs by exactly (s·b·V) x the difference per logit.
  const ModelSpec& m = *find_model_preset("llama3-8b");
  WorkloadOptions o;
  o.micro_batch = 2, o.seq_len = 8192, o.precision = Precision::BF16, o.flash_attention = true;
  const Workload wf = build_workload(m, o);
  o.cross_entropy = CrossEntropy::Torch;
  const Workload wt = build_workload(m, o);
  const double logits = double(o.micro_batch * o.seq_len) * double(m.vocab);
  CHECK(wt.units.back().forward.elementwise_bytes - wf.units.back().forward.elementwise_bytes == rel_approx(4.0 * logits));
  CHECK(wt.units.back().backward.elementwise_bytes - wf.units.back().backward.elementwise_bytes == rel_approx(2.0 * logits));
  CHECK(wt.units.front().forward.elementwise_bytes == wf.units.front().forward.elementwise_bytes);  // only the head changes
}

TEST_CASE("the head's loss and a block being recomputed are never alive together") {
  const ModelSpec& m = *find_model_preset("llama3-8b");
  WorkloadOptions o;
  o.micro_batch = 1, o.seq_len = 4096, o.precision = Precision::BF16, o.flash_attention = true;
  Workload w = build_workload(m, o);
  ShardingSpec s;
  const double block = block_activation_bytes(m, 1, 4096, Precision::BF16, true);
  const double input = 2.0 * 4096 * m.hidden;
  for (CrossEntropy ce : {CrossEntropy::Fused, CrossEntropy::Torch}) {
    ActivationOptions a{Checkpointing::Full, 1, true};
    a.cross_entropy = ce;
    const double head = head_activation_bytes(m, 1, 4096, Precision::BF16, {}, ce);
    CAPTURE(to_string(ce));
    // Full checkpointing: every block's input, then the larger of the loss's peak and one recomputed block.
    CHECK(estimate_memory(w, s, a, Optimizer::Adam, 80e9).activations_bytes == rel_approx(m.layers * input + std::max(head, block)));
    // A trainer that still holds the logits (Composer's state.outputs) has them alive during the recompute.
    a.logits_kept_through_backward = true;
    const double logits = 2.0 * 4096 * double(m.vocab);
    CHECK(estimate_memory(w, s, a, Optimizer::Adam, 80e9).activations_bytes ==
          rel_approx(m.layers * input + std::max(head, block + logits)));
  }
}

TEST_CASE("torchtitan's per-op checkpointing recomputes wk, wo, w3 and the elementwise ops, and keeps the rest") {
  const ModelSpec& m = *find_model_preset("llama3-8b");
  WorkloadOptions o;
  o.micro_batch = 2, o.seq_len = 8192, o.precision = Precision::BF16, o.flash_attention = true;
  o.checkpointing = Checkpointing::TorchtitanOp;
  Workload w = build_workload(m, o);
  const UnitWork& b = w.units[size_t(w.first_block())];
  const int64_t T = 2 * 8192, h = m.hidden, kv = m.kv_dim(), f = m.ffn;
  REQUIRE(b.recompute.gemms.size() == 3);
  CHECK((b.recompute.gemms[0].m == T && b.recompute.gemms[0].n == kv && b.recompute.gemms[0].k == h));  // wk
  CHECK((b.recompute.gemms[1].m == T && b.recompute.gemms[1].n == h && b.recompute.gemms[1].k == h));   // wo
  CHECK((b.recompute.gemms[2].m == T && b.recompute.gemms[2].n == f && b.recompute.gemms[2].k == h));   // w3
  CHECK(b.recompute.attention_flops == 0.0);                                    // attention's output is kept
  CHECK(b.recompute.elementwise_bytes == b.forward.elementwise_bytes);          // every elementwise op again
  // The reported hardware FLOPs count exactly what the workload recomputes.
  const double per_token = hardware_flops_per_token(m, w.params, 8192, Checkpointing::TorchtitanOp) - model_flops_per_token(m, w.params, 8192);
  CHECK(per_token == rel_approx(m.layers * 2.0 * double(h * kv + h * h + h * f)));
  double recompute_flops = 0;
  for (const auto& u : w.units) recompute_flops += u.recompute.flops();
  CHECK(recompute_flops == rel_approx(per_token * T));

  // Memory: more than full checkpointing keeps, less than keeping everything.
  ShardingSpec s;
  auto activations = [&](Checkpointing c) {
    WorkloadOptions oc = o;
    oc.checkpointing = c;
    return estimate_memory(build_workload(m, oc), s, {c, 1, true}, Optimizer::Adam, 80e9).activations_bytes;
  };
  CHECK(activations(Checkpointing::Full) < activations(Checkpointing::TorchtitanOp));
  CHECK(activations(Checkpointing::TorchtitanOp) < activations(Checkpointing::None));
  const double kept = torchtitan_op_kept_bytes(m, 2, 8192, Precision::BF16, true, {});
  // input h, wq h, wv kv, w1 f, w2 h, attention output h (+ fp32 log-sum-exp per head and token)
  CHECK(kept == rel_approx(2.0 * T * (4 * h + kv + f) + 4.0 * m.heads * T));
}

TEST_CASE("early-stopped recompute: a full block's forward less its MLP down GEMM, an eager FP8 linear still runs it") {
  const ModelSpec& m = *find_model_preset("llama3-8b");
  WorkloadOptions o;
  o.micro_batch = 2, o.seq_len = 4096, o.checkpointing = Checkpointing::Full, o.precision = Precision::BF16;
  const double T = double(o.micro_batch * o.seq_len), down = 2.0 * T * double(m.hidden) * double(m.ffn);
  auto recompute_flops = [&](const WorkloadOptions& opt) { return build_workload(m, opt).units[1].recompute.flops(); };
  auto forward_flops = [&](const WorkloadOptions& opt) { return build_workload(m, opt).units[1].forward.flops(); };
  CHECK(recompute_flops(o) == forward_flops(o));  // reentrant: the whole forward again
  WorkloadOptions es = o;
  es.recompute_early_stop = true;
  CHECK(recompute_flops(es) == rel_approx(forward_flops(es) - down).epsilon(1e-12));
  // The residual add after the down projection (read 2, write 1 hidden vectors) is not rerun either.
  const Workload we = build_workload(m, es), wf = build_workload(m, o);
  CHECK(wf.units[1].recompute.elementwise_bytes - we.units[1].recompute.elementwise_bytes == rel_approx(2.0 * T * 3.0 * m.hidden));
  CHECK(we.units[1].recompute_whole_block);
  // FP8 eager: torchao's float8 matmul is an autograd Function, which saves after its GEMM has run.
  WorkloadOptions fp8 = es;
  fp8.fp8 = true;
  CHECK(recompute_flops(fp8) == forward_flops(fp8));
  fp8.compile = true;  // the compiled backward graph recomputes only what it reads
  CHECK(recompute_flops(fp8) == rel_approx(forward_flops(fp8) - down).epsilon(1e-12));
  // Hardware FLOPs per token drop by the down projection of every checkpointed block.
  const ParamCounts& p = we.params;
  CHECK(hardware_flops_per_token(m, p, o.seq_len, Checkpointing::Full, 1, true) ==
        rel_approx(hardware_flops_per_token(m, p, o.seq_len, Checkpointing::Full) - m.layers * 2.0 * m.hidden * m.ffn));
  CHECK(hardware_flops_per_token(m, p, o.seq_len, Checkpointing::SelectiveLayer, 2, true) ==
        rel_approx(hardware_flops_per_token(m, p, o.seq_len, Checkpointing::SelectiveLayer, 2) - (m.layers / 2) * 2.0 * m.hidden * m.ffn));
}

TEST_CASE("eager attention adds its copies and score passes to a block, counted op by op in backward") {
  // bing_bert / Hugging Face attention: q, k, v and the context copied (4 x T·h, read + write), the scores
  // divided and masked in passes of their own (2 x b·a·s², read + write); backward copies the 4 gradients
  // back and scales the scores' gradient once (the mask add has no backward kernel).
  const ModelSpec& m = *find_model_preset("bert-10b");
  WorkloadOptions o;
  o.micro_batch = 2;
  o.seq_len = 512;
  const Workload fused = build_workload(m, o);
  o.eager_attention = true;
  const Workload eager = build_workload(m, o);
  const UnitWork& f = fused.units[fused.first_block()];
  const UnitWork& g = eager.units[eager.first_block()];
  const double e = 2, T = 2.0 * 512, h = double(m.hidden), scores = 2.0 * m.heads * 512.0 * 512.0;
  CHECK(g.forward.elementwise_bytes - f.forward.elementwise_bytes == rel_approx(8 * e * T * h + 4 * e * scores));
  CHECK(g.backward.elementwise_bytes - f.backward.elementwise_bytes == rel_approx(8 * e * T * h + 2 * e * scores));
  CHECK(g.forward.kernels - f.forward.kernels == 6);
  CHECK(g.backward.kernels - f.backward.kernels == 5);
  CHECK(g.forward.flops() == f.forward.flops());  // memory traffic only
  // minGPT-style code (fused_kernels: false) is eager attention plus the tanh-GELU's 7 extra passes.
  o.eager_attention = false;
  o.fused_kernels = false;
  const Workload mingpt = build_workload(m, o);
  const UnitWork& k = mingpt.units[mingpt.first_block()];
  CHECK(k.forward.elementwise_bytes - g.forward.elementwise_bytes == rel_approx(e * T * 14.0 * m.ffn));
  // FlashAttention never materialises the scores: nothing to add.
  o.fused_kernels = true;
  o.eager_attention = true;
  o.flash_attention = true;
  const Workload flash = build_workload(m, o);
  o.eager_attention = false;
  const Workload flash_fused = build_workload(m, o);
  CHECK(flash.units[flash.first_block()].forward.elementwise_bytes == flash_fused.units[flash_fused.first_block()].forward.elementwise_bytes);
}
