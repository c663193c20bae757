#include "models/workload/workload.hpp"

#include <algorithm>

namespace micsim {

const char* to_string(Checkpointing c) {
  switch (c) {
    case Checkpointing::None: return "none";
    case Checkpointing::Full: return "full";
    case Checkpointing::SelectiveOp: return "selective-op";
    case Checkpointing::SelectiveLayer: return "selective-layer";
    case Checkpointing::TorchtitanOp: return "torchtitan-op";
  }
  return "?";
}

const char* to_string(CrossEntropy c) {
  switch (c) {
    case CrossEntropy::Fused: return "fused";
    case CrossEntropy::Torch: return "torch";
    case CrossEntropy::Compiled: return "compiled";
  }
  return "?";
}

LossTraffic loss_traffic_per_logit(CrossEntropy ce, Precision p, bool vocab_parallel) {
  const double e = bytes_per_element(p);
  // Fused (Megatron-LM): the 16-bit logits read, the fp32 softmax written and read back; the backward
  // computes the gradient in place over the same buffer, twice the forward's traffic.
  if (ce == CrossEntropy::Fused) return {e + 8, 2 * (e + 8)};
  // Compiled (Inductor): the fp32 upcast stays in registers; the forward reads the logits twice (max,
  // then sum of exponentials), the backward reads them once more and writes the 16-bit gradient.
  if (ce == CrossEntropy::Compiled) return {2 * e, 2 * e};
  // F.cross_entropy(logits.float()), one kernel per aten op: the cast (read e, write 4), log_softmax (read
  // 4, write 4); backward: nll_loss's dense gradient (write 4), log_softmax_backward (read the gradient
  // and the saved output, write 4), the cast's backward (read 4, write e).
  LossTraffic t{e + 4 + 8, 4 + 12 + 4 + e};
  // DTensor loss_parallel (torch/distributed/tensor/parallel/loss.py) materialises the shifted logits
  // and their exponential (each written and read) in forward, the one-hot target and exp(output) in
  // backward.
  if (vocab_parallel) t.forward += 16, t.backward += 12;
  return t;
}

bool block_checkpointed(Checkpointing c, int every, int layer) {
  if (c == Checkpointing::Full) return true;
  if (c == Checkpointing::SelectiveLayer) return layer % std::max(1, every) == 0;
  return false;
}

double PassWork::flops() const {
  double f = attention_flops;
  for (const auto& g : gemms) f += g.flops();
  for (const auto& g : score_gemms) f += g.flops();
  return f;
}

double Workload::forward_flops() const {
  double f = 0;
  for (const auto& u : units) f += u.forward.flops();
  return f;
}
double Workload::backward_flops() const {
  double f = 0;
  for (const auto& u : units) f += u.backward.flops();
  return f;
}

// Backward of Y[m x n] = X[m x k]·W[k x n]: dX = dY·W^T (m x k over n) and dW = X^T·dY (k x n over m).
static void add_backward_gemms(const std::vector<Gemm>& fwd, std::vector<Gemm>& bwd) {
  for (const auto& g : fwd) {
    bwd.push_back({g.m, g.k, g.n, g.batch});
    bwd.push_back({g.k, g.n, g.m, g.batch});
  }
}

// Extra HBM traffic per token of an eager (not torch.compile'd) Llama block, from the PyTorch op
// sequence of the reference implementations (HF LlamaRMSNorm, apply_rotary_pos_emb, SwiGLU): each
// RMSNorm upcasts to fp32, squares, averages, scales, downcasts and multiplies (~36 bytes per element
// read + written, against 4 fused); rotary embeddings rotate q and k in ~5 passes (~22 bytes per
// element against 4); SwiGLU runs silu and the product as two kernels (10 bytes against 6).
// GPT/BERT blocks use PyTorch's native LayerNorm and GELU kernels: eager is already fused there.
static double eager_extra_bytes_per_token(const ModelSpec& m) {
  if (m.arch != Arch::Llama) return 0;
  const double h = double(m.hidden), kv = double(m.kv_dim()), f = double(m.ffn);
  return 2 * (36 - 4) * h + (22 - 4) * (h + kv) + (10 - 6) * f;
}

// Materialised attention, per rank: QK^T [s/cp x s over head_dim] and P·V [s/cp x head_dim over s]
// for each of the micro-batch's sequences and the rank's heads (cuBLAS strided-batched GEMMs).
static std::vector<Gemm> score_gemms(const ModelSpec& m, const WorkloadOptions& o) {
  const int64_t batch = o.micro_batch * (m.heads / o.mp.tp), q = o.seq_len / o.mp.cp, s = o.seq_len, d = m.head_dim();
  return {{q, s, d, batch}, {q, d, s, batch}};
}

// Elements of a rank's materialised score matrices: its heads' (s/cp) x s scores per sequence.
static double score_elements(const ModelSpec& m, const WorkloadOptions& o) {
  return double(o.micro_batch) * double(m.heads / o.mp.tp) * double(o.seq_len / o.mp.cp) * double(o.seq_len);
}

// Materialised attention's memory-bound passes over the scores (the GEMMs write and read them):
// the fused scale-mask-softmax reads and writes them, dropout reads and writes them and a 1-byte mask.
static double score_elementwise_bytes(const ModelSpec& m, const WorkloadOptions& o) {
  const double e = bytes_per_element(o.precision);
  return score_elements(m, o) * (2 * e + (m.dropout ? 2 * e + 1 : 0));
}

static bool uses_eager_attention(const WorkloadOptions& o) { return !o.flash_attention && (o.eager_attention || !o.fused_kernels); }

// Materialised attention written as eager PyTorch ops, as Hugging Face BERT/RoBERTa/GPT-2 (before SDPA),
// NVIDIA's PyTorch BERT and bing_bert (the MiCS paper's BERT, zarzen/DeepSpeedExamples
// bing_bert/nvidia/modelingpreln.py, BertSelfAttention.forward) compute it:
//   torch.matmul(q, k) and torch.matmul(probs, v) take q, k, v as permuted views, which matmul copies
//   into contiguous batches (3 copies of T x h), and the context is permuted back by .contiguous() (1);
//   the scores are divided by sqrt(d) and the mask added in two passes of their own before softmax.
// Forward: 4 copies (read + write, 2e per element of T x h) and 2 passes over the scores (2e each), 6 kernels.
// Backward, op by op: the 4 copies' gradients are copied back (2e each); the division's backward scales the
// scores' gradient once (2e); the mask add passes its gradient through (no kernel): 5 kernels. Against
// Megatron-LM's fused scale-mask-softmax (score_elementwise_bytes) these are the extra passes. Added to a
// forward and, where given, to its backward (built before, from the forward without them: backward_of
// doubles memory-bound bytes, which these do not follow).
static void add_eager_attention(const ModelSpec& m, const WorkloadOptions& o, PassWork& fwd, PassWork* bwd = nullptr) {
  const double e = bytes_per_element(o.precision);
  const double T = double(o.micro_batch) * double(o.seq_len / o.mp.cp), h = double(m.hidden) / o.mp.tp;
  const double copies = 4.0 * 2.0 * e * T * h, scores = score_elements(m, o);
  fwd.elementwise_bytes += copies + 2.0 * 2.0 * e * scores;
  fwd.kernels += 6;
  if (bwd) {
    bwd->elementwise_bytes += copies + 2.0 * e * scores;
    bwd->kernels += 5;
  }
}

// HBM bytes the forward's FP8 casts of one GEMM move (its input m x k and weight k x n).
// Dynamic scaling: an amax pass and a scaled copy, read 2 + read 2 + write 1 bytes per element, as torchao
// float8 (tensorwise) and Transformer Engine's current scaling do. Delayed scaling (Transformer Engine's
// DelayedScaling, the scale from an amax history): one fused cast-transpose, read 2 + write 1 + write 1
// (transformer_engine fp8_cast_transpose_fused in te.Linear's forward). With FP8 all-gather the weight
// arrives in FP8: each rank cast only its shard, before the gather (torchao
// WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather; Megatron fp8_param_gather).
static double fp8_forward_cast_bytes(const Gemm& g, const WorkloadOptions& o) {
  const double weight_share = o.fp8_all_gather ? 1.0 / std::max(1, o.weight_shards) : 1.0;
  const double per_element = o.fp8_recipe == Fp8Recipe::Delayed ? 4.0 : 5.0;
  return per_element * (double(g.m) * g.k + weight_share * double(g.k) * g.n);
}

// The backward's FP8 casts of one GEMM. Dynamic: the incoming gradient, and the input and weight again in
// the layouts the two backward GEMMs read: counted as twice the forward's casts (backward_of). Delayed:
// the transposes were made in the forward; only the incoming gradient (m x n) is cast-transposed, 4 bytes
// per element (fp8_cast_transpose_bgrad_fused).
static double fp8_backward_cast_bytes(const Gemm& g, const WorkloadOptions& o) {
  if (o.fp8_recipe == Fp8Recipe::Delayed) return 4.0 * double(g.m) * g.n;
  return 2.0 * fp8_forward_cast_bytes(g, o);
}

// One block's forward on one rank. Tensor parallelism splits the GEMMs' output (column-parallel QKV and
// MLP up) or input (row-parallel output projection and MLP down) dimension and the attention heads by
// tp; the norms, residuals and dropout work on whole hidden vectors unless sequence parallelism splits
// them along the sequence. Context parallelism gives the rank s/cp of the queries, attending to all s keys.
static PassWork block_forward(const ModelSpec& m, const WorkloadOptions& o) {
  const int tp = o.mp.tp, cp = o.mp.cp;
  const int hsplit = o.mp.sequence_parallel && tp > 1 ? tp : 1;  // split of hidden-wide elementwise work
  const int64_t T = o.micro_batch * o.seq_len / cp, h = m.hidden, f = m.ffn, s = o.seq_len;
  const double e = bytes_per_element(o.precision);
  PassWork w;
  w.fp8_gemms = o.fp8;
  w.causal = m.causal();
  w.attention_seq = s / cp;  // ring attention: each step a (s/cp) x (s/cp) block of queries and keys
  w.gemms.push_back({T, (h + 2 * m.kv_dim()) / tp, h});         // fused QKV projection (column-parallel)
  w.gemms.push_back({T, h, h / tp});                            // attention output projection (row-parallel)
  w.gemms.push_back({T, (m.gated_mlp() ? 2 : 1) * f / tp, h});  // MLP up (+ gate) (column-parallel)
  w.gemms.push_back({T, h, f / tp});                            // MLP down (row-parallel)
  // QK^T and P·V: 2·(2·s·s·head_dim) per head and sequence = 4·T·s·h (non-causal count). A fused
  // kernel never writes the scores; without one they are two batched GEMMs per (sequence, head) whose
  // inner dimension is the head size, costed as GEMMs (their score write and read included).
  if (o.flash_attention) w.attention_flops = 4.0 * double(T) * double(s) * double(h) / tp;
  else w.score_gemms = score_gemms(m, o);
  // Memory-bound traffic (read + write, element bytes): two norms (2·2Th), two residual adds (2·3Th),
  // bias+activation over the FFN (2Tf, SwiGLU 3Tf), dropout on two hidden tensors (2·2Th + masks).
  double per_token = (4 * h + 6 * h + (m.dropout ? 5 * h : 0)) / double(hsplit) + (m.gated_mlp() ? 3 : 2) * f / double(tp);
  w.elementwise_bytes = e * double(T) * per_token;
  if (!o.flash_attention) w.elementwise_bytes += score_elementwise_bytes(m, o);
  w.kernels = o.flash_attention ? 12 : 16;
  if (o.fp8) {
    for (const auto& g : w.gemms) w.elementwise_bytes += fp8_forward_cast_bytes(g, o);
    w.kernels += 4 * int(w.gemms.size());
  }
  if (o.compile) {
    // torch.compile fuses the pointwise ops around the GEMMs and attention into a few Triton kernels.
    w.kernels = int(w.gemms.size()) + 1 + 4;
  } else {
    w.eager_bytes = double(T) * eager_extra_bytes_per_token(m) / tp;
    if (m.arch == Arch::Llama) w.kernels += 24;  // decomposed norms (2 x 6), rotary (~10), SwiGLU (2)
  }
  if (!o.fused_kernels) {
    // Eager PyTorch (minGPT-style): the tanh-GELU is ~8 elementwise kernels over the FFN activations
    // (7 more passes than a fused one); its attention is eager_attention's (below).
    w.elementwise_bytes += e * double(T) * 7.0 * 2.0 * f / tp;
    w.kernels += 8;
  }
  return w;  // eager attention's passes are added by build_workload, beside the backward's
}

// The block's dense matmuls in the order the model code calls them (Llama: wq, wk, wv, wo, w1, w3, w2;
// GPT-2: c_attn, c_proj, c_fc, c_proj), as [m, n, k] per rank: what torchtitan's per-op policy counts.
static std::vector<Gemm> block_matmuls_in_call_order(const ModelSpec& m, const WorkloadOptions& o) {
  const int tp = o.mp.tp;
  const int64_t T = o.micro_batch * o.seq_len / o.mp.cp, h = m.hidden, f = m.ffn, kv = m.kv_dim();
  std::vector<Gemm> g;
  if (m.arch == Arch::Gpt) g.push_back({T, (h + 2 * kv) / tp, h});
  else g.push_back({T, h / tp, h}), g.push_back({T, kv / tp, h}), g.push_back({T, kv / tp, h});
  g.push_back({T, h, h / tp});
  if (m.gated_mlp()) g.push_back({T, f / tp, h});
  g.push_back({T, f / tp, h});
  g.push_back({T, h, f / tp});
  return g;
}

// torchtitan's per-op policy counts a block's aten.mm calls from 1 and saves the odd-numbered ones'
// outputs: the calls at even 0-based positions are kept, the others recomputed.
static bool torchtitan_op_recomputes(size_t call) { return call % 2 == 1; }

// torchtitan's per-op checkpointing recomputes, in backward, the even-numbered matmuls, materialised
// attention's batched matmuls (bmm is not on its save list) and every elementwise op; attention kept.
static PassWork torchtitan_op_recompute(const ModelSpec& m, const WorkloadOptions& o, const PassWork& fwd) {
  PassWork r;
  r.fp8_gemms = fwd.fp8_gemms;
  r.causal = fwd.causal;
  const std::vector<Gemm> mm = block_matmuls_in_call_order(m, o);
  for (size_t i = 0; i < mm.size(); ++i)
    if (torchtitan_op_recomputes(i)) r.gemms.push_back(mm[i]);
  r.score_gemms = fwd.score_gemms;
  r.elementwise_bytes = fwd.elementwise_bytes;
  r.eager_bytes = fwd.eager_bytes;
  r.kernels = std::max(1, fwd.kernels - (o.flash_attention ? 1 : 0));
  return r;
}

// A checkpointed block recomputed with early stop. PyTorch's non-reentrant checkpoint (use_reentrant=False,
// checkpoint_wrapper's NO_REENTRANT) counts the tensors the block's forward saved and, since 2.1, stops
// the recomputation when the last of them is rebuilt (torch.utils.checkpoint set_checkpoint_early_stop,
// default on: pytorch/pytorch PR #96866, March 2023). The last saved tensors are the MLP down projection's
// input and weight, saved by autograd before its GEMM runs: that GEMM and the residual add after it are not
// recomputed. A custom autograd Function saves after its forward has run, so an FP8 linear (torchao
// float8's matmul Function) still computes the GEMM, unless torch.compile's partitioner, which recomputes
// only what the backward graph reads, compiled the block. Reentrant checkpoints (DeepSpeed, Megatron-LM,
// InternEvo, PyTorch < 2.1) rerun the whole forward.
bool recompute_skips_mlp_down(const WorkloadOptions& o) { return o.recompute_early_stop && (!o.fp8 || o.compile); }

static PassWork early_stopped_recompute(const ModelSpec& m, const WorkloadOptions& o, const PassWork& fwd) {
  PassWork r = fwd;
  const int tp = o.mp.tp;
  const int hsplit = o.mp.sequence_parallel && tp > 1 ? tp : 1;
  const int64_t T = o.micro_batch * o.seq_len / o.mp.cp;
  if (recompute_skips_mlp_down(o)) {
    r.gemms.pop_back();  // MLP down: block_forward's last GEMM (its launch goes with it)
    if (o.fp8) r.elementwise_bytes -= fp8_forward_cast_bytes(fwd.gemms.back(), o);
  }
  // The residual add after the down projection: its bytes and its kernel.
  r.elementwise_bytes -= bytes_per_element(o.precision) * double(T) * 3.0 * double(m.hidden) / hsplit;
  r.kernels = std::max(1, r.kernels - 1);
  return r;
}

static PassWork backward_of(const PassWork& fwd, bool flash) {
  PassWork b;
  b.fp8_gemms = fwd.fp8_gemms;
  b.causal = fwd.causal;
  b.attention_seq = fwd.attention_seq;
  add_backward_gemms(fwd.gemms, b.gemms);
  add_backward_gemms(fwd.score_gemms, b.score_gemms);  // dQ, dK from dS; dP, dV from dO
  // Attention backward does twice the forward matmul work (dQ, dK, dV, dP); FlashAttention also
  // recomputes the scores (counted in compute cost as extra time, not as model FLOPs).
  b.attention_flops = 2.0 * fwd.attention_flops;
  b.elementwise_bytes = 2.0 * fwd.elementwise_bytes;
  b.eager_bytes = 2.0 * fwd.eager_bytes;
  b.kernels = 2 * fwd.kernels;
  return b;
}

int64_t block_linear_weights(const ModelSpec& m) {
  const int64_t h = m.hidden, f = m.ffn, kv = m.kv_dim();
  return h * (h + 2 * kv) + h * h + (m.gated_mlp() ? 2 : 1) * h * f + f * h;
}

std::vector<int64_t> block_tensors(const ModelSpec& m) {
  const int64_t h = m.hidden, f = m.ffn, kv = m.kv_dim();
  const bool bias = m.has_biases();
  std::vector<int64_t> t;
  auto linear = [&](int64_t in, int64_t out) {
    t.push_back(in * out);
    if (bias) t.push_back(out);
  };
  if (m.arch == Arch::Gpt) {
    linear(h, h + 2 * kv);  // fused c_attn
  } else {
    linear(h, h), linear(h, kv), linear(h, kv);
  }
  linear(h, h);  // attention output
  t.push_back(m.norm_params());
  if (m.gated_mlp()) linear(h, f);  // gate
  linear(h, f);
  linear(f, h);
  t.push_back(m.norm_params());
  return t;
}

// The units of one rank. Without pipeline parallelism: the whole model. With pp stages the rank is one
// of stage `opt.stage`'s GPUs (default the last): its blocks (ModelParallelism::stage_layer_indices), the
// embedding on the first stage, the head on the last (with tied embeddings, Megatron keeps a copy of the
// word embedding there for the logits). sim/simulation.cpp builds every distinct stage.
// Tensor parallelism splits every weight by tp (vocabulary-parallel embedding and logits); the norms'
// few weights are counted split too.
Workload build_workload(const ModelSpec& model, const WorkloadOptions& opt) {
  Workload w;
  w.model = model;
  w.params = count_params(model);
  w.options = opt;
  const ModelParallelism& mp = opt.mp;
  const int tp = mp.tp, cp = mp.cp, pp = mp.pp;
  const int hsplit = mp.sequence_parallel && tp > 1 ? tp : 1;
  const int64_t T = opt.micro_batch * opt.seq_len / cp, h = model.hidden;
  const double e = bytes_per_element(opt.precision);
  auto split = [&](std::vector<int64_t> v) {
    if (tp > 1)
      for (auto& x : v) x = std::max<int64_t>(1, x / tp);
    return v;
  };

  const int stage = pp == 1 ? 0 : opt.stage < 0 || opt.stage >= pp ? pp - 1 : opt.stage;
  if (stage == 0) {
    UnitWork emb;
    emb.kind = UnitKind::Embedding;
    emb.tensors = {model.vocab * h};
    if (model.max_position > 0) emb.tensors.push_back(model.max_position * h);
    if (model.type_vocab > 0) emb.tensors.push_back(int64_t(model.type_vocab) * h);
    if (w.params.embedding > int64_t(0)) {
      int64_t rest = w.params.embedding;
      for (int64_t x : emb.tensors) rest -= x;
      if (rest > 0) emb.tensors.push_back(rest);  // embedding LayerNorm
    }
    emb.tensors = split(emb.tensors);
    for (int64_t x : emb.tensors) emb.params += x;
    emb.gather_params = emb.params;
    emb.forward.elementwise_bytes =
        (e * double(T) * h * (model.max_position > 0 ? 4 : 2) + (model.arch == Arch::Bert ? 4 * e * T * h : 0)) / hsplit;
    emb.forward.kernels = 4;
    emb.backward.elementwise_bytes = 2 * emb.forward.elementwise_bytes;
    emb.backward.kernels = 4;
    w.units.push_back(emb);
  }

  PassWork bf = block_forward(model, opt);
  PassWork bb = backward_of(bf, opt.flash_attention);
  if (uses_eager_attention(opt)) add_eager_attention(model, opt, bf, &bb);  // before the recomputes copy bf
  if (opt.fp8) {
    // backward_of doubled the forward's casts with the rest of its memory-bound bytes: the recipe's own.
    for (const auto& g : bf.gemms) bb.elementwise_bytes += fp8_backward_cast_bytes(g, opt) - 2.0 * fp8_forward_cast_bytes(g, opt);
  }
  if (opt.fp8_all_gather) {
    // The gathered FP8 weight feeds the input-gradient GEMM transposed (FP8 tensor cores take only the
    // TN layout): one copy of it, read 1 + write 1 byte per element, in place of its cast.
    for (const auto& g : bf.gemms) bb.elementwise_bytes += 2.0 * double(g.k) * double(g.n);
  }
  // Selective (attention-core) recomputation: QK^T, softmax and P.V again, nothing else.
  PassWork core;
  core.attention_flops = bf.attention_flops;
  core.score_gemms = bf.score_gemms;
  core.causal = bf.causal;
  core.attention_seq = bf.attention_seq;
  if (!opt.flash_attention) core.elementwise_bytes = score_elementwise_bytes(model, opt);
  core.kernels = opt.flash_attention ? 1 : 4;
  if (uses_eager_attention(opt)) add_eager_attention(model, opt, core);  // the core's copies and passes again
  const std::vector<int> layers = mp.stage_layer_indices(model.layers, stage);
  w.stage = stage;
  w.stage_layers = int(layers.size());
  const std::vector<int64_t> tensors = split(block_tensors(model));
  int64_t block_params = 0;
  for (int64_t x : tensors) block_params += x;
  w.rank_block_params = block_params;
  for (int l : layers) {
    UnitWork u;
    u.kind = UnitKind::Block;
    u.layer = l;
    u.params = u.gather_params = block_params;
    if (opt.fp8_all_gather) u.fp8_gather_params = block_linear_weights(model) / tp;
    u.tensors = tensors;
    u.forward = bf;
    u.backward = bb;
    if (block_checkpointed(opt.checkpointing, opt.checkpoint_every, l)) {
      u.recompute = opt.recompute_early_stop ? early_stopped_recompute(model, opt, bf) : bf;
      u.recompute_whole_block = true;
      u.recompute_stops_early = opt.recompute_early_stop;
    }
    else if (opt.checkpointing == Checkpointing::SelectiveOp) u.recompute = core;
    else if (opt.checkpointing == Checkpointing::TorchtitanOp) u.recompute = torchtitan_op_recompute(model, opt, bf);
    w.units.push_back(u);
  }

  if (stage == std::max(pp, 1) - 1) {
    UnitWork head;
    head.kind = UnitKind::Head;
    if (!model.tied_embeddings || pp > 1) head.tensors.push_back(model.vocab * h);  // a pipeline's last stage owns its copy
    if (model.encoder_head != EncoderHead::None) head.tensors.push_back(h * h);
    {
      const int64_t rest = w.params.head - (model.tied_embeddings ? 0 : model.vocab * h) - (model.encoder_head != EncoderHead::None ? h * h : 0);
      if (rest > 0) head.tensors.push_back(rest);  // norms, biases, pooler
    }
    head.tensors = split(head.tensors);
    for (int64_t x : head.tensors) head.params += x;
    // The logits GEMM needs the (tied) word embedding gathered again.
    head.gather_params = head.params + (model.tied_embeddings && pp == 1 ? model.vocab * h / tp : 0);
    if (model.encoder_head != EncoderHead::None) head.forward.gemms.push_back({T, h / tp, h});  // MLM transform
    head.forward.gemms.push_back({T, ((model.vocab + tp - 1) / tp), h});                                     // logits (vocabulary-parallel)
    // Final norm (read + write, twice that in backward), and the loss (loss_traffic_per_logit).
    const double rank_logits = double(T) * double((model.vocab + tp - 1) / tp);
    const LossTraffic loss = loss_traffic_per_logit(opt.cross_entropy, opt.precision, tp > 1);
    head.forward.elementwise_bytes = 4 * e * T * h / hsplit + rank_logits * loss.forward;
    head.forward.kernels = 6;
    head.backward = backward_of(head.forward, false);
    head.backward.elementwise_bytes = 2 * 4 * e * T * h / hsplit + rank_logits * loss.backward;
    w.units.push_back(head);
  }

  for (size_t i = 0; i < w.units.size(); ++i) w.units[i].index = static_cast<int>(i);
  for (const auto& u : w.units) w.rank_params += u.params;
  w.tp_activation_bytes = tp > 1 ? e * double(T) * double(h) : 0.0;
  w.cp_kv_bytes = cp > 1 ? e * double(opt.micro_batch) * double(opt.seq_len) * 2.0 * double(model.kv_dim()) / tp : 0.0;
  w.pp_activation_bytes = pp > 1 ? e * double(T) * double(h) / tp : 0.0;
  return w;
}

int Workload::first_block() const {
  for (size_t i = 0; i < units.size(); ++i)
    if (units[i].kind == UnitKind::Block) return int(i);
  return 0;
}

double model_flops_per_token(const ModelSpec& m, const ParamCounts& p, int64_t seq_len) {
  return 6.0 * double(p.total) + 12.0 * m.layers * double(m.hidden) * double(seq_len);
}

double hardware_flops_per_token(const ModelSpec& m, const ParamCounts& p, int64_t seq_len, Checkpointing c, int every,
                                bool skips_mlp_down) {
  const double base = model_flops_per_token(m, p, seq_len);
  const double attention_core = 4.0 * double(m.hidden) * double(seq_len);  // per block and token, forward
  const double not_rerun = skips_mlp_down ? 2.0 * double(m.ffn) * double(m.hidden) : 0.0;  // per block and token
  switch (c) {
    case Checkpointing::None: return base;
    case Checkpointing::Full:
      return 8.0 * double(p.total) + 16.0 * m.layers * double(m.hidden) * double(seq_len) - m.layers * not_rerun;
    case Checkpointing::SelectiveOp: return base + m.layers * attention_core;
    case Checkpointing::SelectiveLayer: {
      int checkpointed = 0;
      for (int l = 0; l < m.layers; ++l) checkpointed += block_checkpointed(c, every, l);
      return base + checkpointed * (2.0 * double(p.per_layer) + attention_core - not_rerun);
    }
    case Checkpointing::TorchtitanOp: {
      WorkloadOptions one;  // one token, no model parallelism
      const std::vector<Gemm> mm = block_matmuls_in_call_order(m, one);
      double recomputed = 0;
      for (size_t i = 0; i < mm.size(); ++i)
        if (torchtitan_op_recomputes(i)) recomputed += 2.0 * double(mm[i].n) * double(mm[i].k);
      return base + m.layers * recomputed;
    }
  }
  return base;
}

}  // namespace micsim
