#include "models/memory/memory_model.hpp"

#include <algorithm>

namespace micsim {

namespace {
constexpr double kCudaContextBytes = 1024.0 * 1024.0 * 1024.0;  // CUDA context and library workspaces, ~1 GiB
}

double block_activation_bytes(const ModelSpec& m, int64_t b, int64_t s, Precision p, bool flash) {
  const double e = bytes_per_element(p);
  const double sb = double(s) * double(b), h = double(m.hidden), f = double(m.ffn), kv = double(m.kv_dim());
  const double mask = m.dropout ? 1.0 : 0.0;  // dropout masks: one byte per element
  // Attention: QKV input, Q and K (for QK^T), V, output-projection input, hidden dropout mask.
  double attention = e * sb * (h + (h + kv) + kv + h) + mask * sb * h;
  // Scores: softmax output, dropout mask and output (5·a·s²·b bytes in 16-bit); fused kernels keep
  // only the fp32 log-sum-exp per row.
  const double sq = double(m.heads) * double(s) * double(s) * double(b);
  attention += flash ? 4.0 * m.heads * sb : sq * (e + (m.dropout ? e + 1.0 : 0.0));
  // MLP: input, up output (activation input), activation output; SwiGLU keeps gate, up and product.
  double mlp = e * sb * (h + (m.gated_mlp() ? 3.0 : 2.0) * f) + mask * sb * h;
  double norms = 2.0 * e * sb * h;
  return attention + mlp + norms;
}

double rank_block_activation_bytes(const ModelSpec& m, int64_t b, int64_t s, Precision p, bool flash, const ModelParallelism& mp) {
  if (mp.tp == 1 && mp.cp == 1) return block_activation_bytes(m, b, s, p, flash);
  const double e = bytes_per_element(p);
  const double sb = double(s / mp.cp) * double(b), h = double(m.hidden), f = double(m.ffn), kv = double(m.kv_dim());
  const double mask = m.dropout ? 1.0 : 0.0;
  const double tp = mp.tp, hsplit = mp.sequence_parallel ? tp : 1.0;
  // Whole hidden vectors: attention and MLP inputs, two norms' inputs, two dropout masks.
  const double replicated = e * sb * h * 2 + 2 * mask * sb * h + 2.0 * e * sb * h;
  // Inside the tensor-parallel region: Q, K, V, the output projection's input, the MLP's inner activations.
  double split = e * sb * ((h + kv) + kv + h) + e * sb * (m.gated_mlp() ? 3.0 : 2.0) * f;
  const double sq = double(m.heads) * double(s / mp.cp) * double(s) * double(b);
  split += flash ? 4.0 * m.heads * sb : sq * (e + (m.dropout ? e + 1.0 : 0.0));
  return replicated / hsplit + split / tp;
}

double attention_core_activation_bytes(const ModelSpec& m, int64_t b, int64_t s, Precision p, bool flash) {
  const double e = bytes_per_element(p);
  const double sb = double(s) * double(b);
  const double sq = double(m.heads) * double(s) * double(s) * double(b);
  return flash ? 4.0 * m.heads * sb : sq * (e + (m.dropout ? e + 1.0 : 0.0));
}

double torchtitan_op_kept_bytes(const ModelSpec& m, int64_t b, int64_t s, Precision p, bool flash, const ModelParallelism& mp) {
  const double e = bytes_per_element(p);
  const double T = double(s / mp.cp) * double(b), h = double(m.hidden), f = double(m.ffn), kv = double(m.kv_dim());
  const double tp = mp.tp;
  const bool sp = mp.sequence_parallel && mp.tp > 1;
  double kept = e * T * h / (sp ? tp : 1.0);  // the block's input (checkpoint)
  // Odd-numbered matmuls' outputs (Llama: wq, wv, w1, w2; GPT-2: c_attn, c_fc). A row-parallel output is
  // a full-width partial sum before its reduction.
  if (m.arch == Arch::Gpt) kept += e * T * ((h + 2 * kv) / tp + f / tp);
  else kept += e * T * (h / tp + kv / tp + f / tp + (m.gated_mlp() ? h : 0.0));
  if (flash) kept += e * T * h / tp + 4.0 * double(m.heads) / tp * T;  // attention output and log-sum-exp
  if (sp) kept += 2.0 * e * T * h / tp;                                 // the two reduce-scatters' outputs
  return kept;
}

double loss_bytes_per_logit(CrossEntropy ce, Precision p, bool vocab_parallel) {
  const double e = bytes_per_element(p);
  // Megatron-LM (tensor_parallel/cross_entropy.py): the logits and one fp32 copy in which the softmax,
  // then its gradient, are computed in place.
  if (ce == CrossEntropy::Fused) return e + 4.0;
  // Compiled: the graph keeps the 16-bit logits (its input) for the backward, which writes the 16-bit
  // gradient in one fused kernel; the fp32 upcast and softmax never reach memory.
  if (ce == CrossEntropy::Compiled) return 2.0 * e;
  const double fp32_copy = e < 4.0 ? 4.0 : 0.0;  // logits.float() copies 16-bit logits
  if (!vocab_parallel) {
    // aten log_softmax: forward holds the logits, the copy and the log-softmax output; backward (the
    // logits deleted first, as torchtitan's train step does) holds the saved output, nll_loss's gradient
    // and log_softmax_backward's output, 4 bytes each.
    return std::max(e + fp32_copy + 4.0, 12.0);
  }
  // DTensor loss_parallel (torch/distributed/tensor/parallel/loss.py, _log_softmax and
  // _nll_loss_and_log_softmax_backward): forward adds the shifted logits and their exponential (then the
  // result); backward holds the saved output, the scattered one-hot, exp(output) and their sum, 4 B each.
  return std::max(e + fp32_copy + 8.0, 16.0);
}

double loss_cached_bytes_per_logit(CrossEntropy ce, Precision p) {
  // Eager F.cross_entropy(logits.float()) frees the 16-bit logits (torchtitan `del pred`) and the fp32
  // copy before its backward allocates its fp32 gradients, 4 bytes per logit each: two fit where the
  // copy and the freed scratch were, the last one does not fit in the logits' e-byte block and is
  // allocated anew, so the caching allocator holds the logits' block besides what is allocated
  // (alloc/free order of aten log_softmax / nll_loss and of DTensor's loss_parallel alike). With
  // 32-bit logits the freed block fits it: nothing extra.
  const double e = bytes_per_element(p);
  return ce == CrossEntropy::Torch && e < 4.0 ? e : 0.0;
}

namespace {
// The head's activations of one micro-batch: what exists from its forward to its backward (logits and
// the loss at its peak, the final norm / MLM transform), and the embedding's (until the very end).
struct HeadActivations {
  double head = 0, embedding = 0;
  double logits = 0;  // the logits tensor alone (16-bit)
  double cached = 0;  // freed at the loss but still held by the caching allocator (loss_cached_bytes_per_logit)
};
HeadActivations head_activations(const ModelSpec& m, int64_t b, int64_t s, Precision p, const ModelParallelism& mp, CrossEntropy ce) {
  const double e = bytes_per_element(p);
  const double sb = double(s / mp.cp) * double(b);
  const double rank_logits = sb * double((m.vocab + mp.tp - 1) / mp.tp);
  const double logits = rank_logits * loss_bytes_per_logit(ce, p, mp.tp > 1);
  const double extra = e * sb * m.hidden * (m.encoder_head != EncoderHead::None ? 4.0 : 1.0) / (mp.sequence_parallel ? mp.tp : 1);  // final norm / MLM transform
  const double embedding = (m.dropout ? 1.0 : 0.0) * sb * m.hidden;  // embedding dropout mask
  return {logits + extra, embedding, e * rank_logits, rank_logits * loss_cached_bytes_per_logit(ce, p)};
}
}  // namespace

double head_activation_bytes(const ModelSpec& m, int64_t b, int64_t s, Precision p, const ModelParallelism& mp, CrossEntropy ce) {
  const HeadActivations h = head_activations(m, b, s, p, mp, ce);
  return h.head + h.embedding;
}

double optimizer_bytes_per_param(Optimizer opt, Precision p) {
  const double master = p == Precision::FP32 ? 0.0 : 4.0;  // fp32 master weights for mixed precision
  switch (opt) {
    case Optimizer::Adam:
    case Optimizer::Lamb: return master + 8.0;  // first and second moments in fp32
    case Optimizer::Sgd: return master + 4.0;   // momentum
  }
  return master;
}

MemoryEstimate estimate_memory(const Workload& w, const ShardingSpec& s, const ActivationOptions& a,
                               Optimizer opt, double capacity) {
  MemoryEstimate m;
  const double psi = double(w.rank_params);  // what this rank holds before data-parallel sharding
  const Precision prec = w.options.precision;
  const double pe = bytes_per_element(prec);  // parameters and gradients in the training precision
  m.params_bytes = pe * psi / s.param_shards;
  m.grads_bytes = pe * psi / s.grad_shards;
  m.optimizer_bytes = optimizer_bytes_per_param(opt, prec) * psi / s.optimizer_shards;
  m.model_states_bytes = m.params_bytes + m.grads_bytes + m.optimizer_bytes;

  // Activations of one micro-batch (accumulation frees them between micro-steps).
  const ModelSpec& md = w.model;
  const int64_t b = w.options.micro_batch, sl = w.options.seq_len;
  const ModelParallelism& mp = w.options.mp;
  const double block = rank_block_activation_bytes(md, b, sl, prec, a.flash_attention, mp);
  const double layer_input = pe * double(sl / mp.cp) * double(b) * md.hidden / (mp.sequence_parallel ? mp.tp : 1);
  const int layers = w.stage_layers > 0 ? w.stage_layers : md.layers;
  // Per micro-batch: what the blocks keep until their backward (`stored`), and what exists only while
  // one block is recomputed (`transient`, once, however many micro-batches a pipeline stage holds).
  double stored = layers * block, transient = 0;
  switch (a.checkpointing) {
    case Checkpointing::None: break;
    case Checkpointing::Full: stored = layers * layer_input, transient = block; break;  // inputs, plus one block being recomputed
    case Checkpointing::SelectiveOp: {
      double core = attention_core_activation_bytes(md, b, sl, prec, a.flash_attention);
      if (!mp.none()) core = core / mp.tp / mp.cp;  // heads split by tp, queries by cp
      stored = layers * (block - core), transient = core;
      break;
    }
    case Checkpointing::TorchtitanOp: {
      const double kept = std::min(block, torchtitan_op_kept_bytes(md, b, sl, prec, a.flash_attention, mp));
      stored = layers * kept, transient = block - kept;  // the rest exists again while one block is recomputed
      break;
    }
    case Checkpointing::SelectiveLayer: {
      int checkpointed = 0;
      for (int l = md.layers - layers; l < md.layers; ++l) checkpointed += block_checkpointed(a.checkpointing, a.checkpoint_every, l);
      stored = checkpointed * layer_input + (layers - checkpointed) * block, transient = checkpointed > 0 ? block : 0.0;
      break;
    }
  }
  // At the peak the blocks' stored activations (of every micro-batch in flight) and the embedding's are
  // alive, and on top of them either the head with its loss (end of the forward, start of the backward)
  // or one block being recomputed (later: the head's tensors are freed by then, unless the trainer still
  // holds the logits, as Composer does in state.outputs for its training metrics), never both.
  HeadActivations head = head_activations(md, b, sl, prec, mp, a.cross_entropy);
  // Under pipeline parallelism only the last stage computes the logits and the loss, only the first embeds.
  auto holds = [&](UnitKind k) { return std::any_of(w.units.begin(), w.units.end(), [k](const UnitWork& u) { return u.kind == k; }); };
  if (!holds(UnitKind::Head)) head.head = head.logits = head.cached = 0;
  if (!holds(UnitKind::Embedding)) head.embedding = 0;
  const double held_logits = a.logits_kept_through_backward ? head.logits : 0.0;
  const double kept = a.in_flight_micro_batches * stored + head.embedding;
  m.activations_bytes = kept + std::max(head.head, transient + held_logits);
  // The caching allocator's view: blocks freed at the loss stay reserved; what runs after the loss (a
  // block's recomputation, the optimizer) reuses them.
  const double reserved_activations = kept + std::max(head.head + head.cached, transient + held_logits);

  // Buffers. Sharded strategies hold the unit being computed plus the prefetched ones, bounded by
  // max_live_parameters, and the full gradient of the unit until it is reduce-scattered.
  double largest_unit = 0, block_params = double(w.rank_block_params);
  // The same in bytes: FP8 weights (strategy.fp8_all_gather) are gathered at 1 byte.
  double largest_unit_bytes = 0, block_bytes = pe * block_params;
  for (const auto& u : w.units) {
    largest_unit = std::max(largest_unit, double(u.gather_params));
    largest_unit_bytes = std::max(largest_unit_bytes, u.gather_bytes(pe));
    if (u.kind == UnitKind::Block) block_bytes = u.gather_bytes(pe);
  }
  const double live_bytes =
      std::max(largest_unit_bytes, std::min(largest_unit_bytes + s.prefetch_units * block_bytes, pe * s.max_live_parameters));
  const double bucket = std::min(s.grad_bucket_elements, psi);
  // The reduction's input is cast to the reduce precision (FSDP2 foreach_reduce copies the unsharded
  // gradient into an fp32 buffer when reduce_dtype is fp32).
  const double rpe = s.reduce_element_bytes(pe);
  auto grad_buffer_bytes = [&](bool gathers) { return rpe * std::max(bucket, gathers ? largest_unit : 0.0) * s.grad_buckets_in_flight; };
  if (s.gathers_parameters) m.gathered_params_bytes = live_bytes;
  m.grad_buffer_bytes = grad_buffer_bytes(s.gathers_parameters);
  if (s.gathered_through_backward) m.gathered_params_bytes = std::max(live_bytes, pe * psi);
  if (s.unsharded_through_step) {
    m.gathered_params_bytes = pe * psi;  // the stage's parameters, gathered once
    m.grad_buffer_bytes = 4.0 * psi;     // unsharded fp32 gradients accumulated over the micro-batches
  }
  // Mixed precision: the optimizer step works on an fp32 copy of the local gradient shard.
  m.optimizer_temp_bytes = prec == Precision::FP32 ? 0.0 : 4.0 * psi / s.optimizer_shards;

  const double step_peak = m.activations_bytes + m.gathered_params_bytes + m.grad_buffer_bytes;
  m.buffers_bytes = std::max(m.gathered_params_bytes + m.grad_buffer_bytes, m.optimizer_temp_bytes);
  m.peak_bytes = m.model_states_bytes + std::max(step_peak, m.optimizer_temp_bytes);
  const double step_reserved = reserved_activations + m.gathered_params_bytes + m.grad_buffer_bytes;
  m.allocator_reserved_bytes = m.model_states_bytes + std::max(step_reserved, m.optimizer_temp_bytes);
  m.capacity_bytes = capacity;
  // Not seen by the framework's allocator: CUDA context and library workspaces (~1 GiB) and
  // allocator fragmentation (5 % of capacity).
  m.reserve_bytes = kCudaContextBytes + 0.05 * capacity;
  // The blocks the allocator holds at the loss come out of the fragmentation allowance, but never past
  // the context's share.
  m.fits = m.peak_bytes <= capacity - m.reserve_bytes && m.allocator_reserved_bytes <= capacity - kCudaContextBytes;

  // Fully sharded over G GPUs (parameters gathered per unit, as ZeRO-3) the peak is
  // states/G + max(working set, fp32 gradients/G); solve for G. For a gathering strategy the working
  // set is exactly this step's activations + gathered parameters + gradient buffers.
  const double usable = capacity - m.reserve_bytes;
  m.working_set_bytes = m.activations_bytes + live_bytes + grad_buffer_bytes(true);
  const double states_total = (2.0 * pe + optimizer_bytes_per_param(opt, prec)) * psi;
  const double temp_total = prec == Precision::FP32 ? 0.0 : 4.0 * psi;
  if (m.working_set_bytes < usable) {
    double g = std::max({1.0, std::ceil(states_total / (usable - m.working_set_bytes)), std::ceil((states_total + temp_total) / usable)});
    m.gpus_to_fit = g < 9e15 ? static_cast<int64_t>(g) : 0;
  }
  return m;
}

}  // namespace micsim
