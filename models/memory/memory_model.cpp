#include "models/memory/memory_model.hpp"

#include <algorithm>

namespace micsim {

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

double head_activation_bytes(const ModelSpec& m, int64_t b, int64_t s, Precision p, const ModelParallelism& mp) {
  const double e = bytes_per_element(p);
  const double sb = double(s / mp.cp) * double(b);
  double logits = sb * double((m.vocab + mp.tp - 1) / mp.tp) * (e + 4.0);  // logits, then fp32 softmax for the loss (vocabulary-parallel)
  double extra = e * sb * m.hidden * (m.encoder_head != EncoderHead::None ? 4.0 : 1.0) / (mp.sequence_parallel ? mp.tp : 1);  // final norm / MLM transform
  double embedding = (m.dropout ? 1.0 : 0.0) * sb * m.hidden;  // embedding dropout mask
  return logits + extra + embedding;
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
    case Checkpointing::SelectiveLayer: {
      int checkpointed = 0;
      for (int l = md.layers - layers; l < md.layers; ++l) checkpointed += block_checkpointed(a.checkpointing, a.checkpoint_every, l);
      stored = checkpointed * layer_input + (layers - checkpointed) * block, transient = checkpointed > 0 ? block : 0.0;
      break;
    }
  }
  const double blocks = a.in_flight_micro_batches * stored + transient;
  m.activations_bytes = head_activation_bytes(md, b, sl, prec, mp) + blocks;

  // Buffers. Sharded strategies hold the unit being computed plus the prefetched ones, bounded by
  // max_live_parameters, and the full gradient of the unit until it is reduce-scattered.
  double largest_unit = 0, block_params = double(w.rank_block_params);
  for (const auto& u : w.units) largest_unit = std::max(largest_unit, double(u.gather_params));
  const double live_params = std::max(largest_unit, std::min(largest_unit + s.prefetch_units * block_params, s.max_live_parameters));
  const double bucket = std::min(s.grad_bucket_elements, psi);
  auto grad_buffer_bytes = [&](bool gathers) { return pe * std::max(bucket, gathers ? largest_unit : 0.0) * s.grad_buckets_in_flight; };
  if (s.gathers_parameters) m.gathered_params_bytes = pe * live_params;
  m.grad_buffer_bytes = grad_buffer_bytes(s.gathers_parameters);
  if (s.unsharded_through_step) {
    m.gathered_params_bytes = pe * psi;  // the stage's parameters, gathered once
    m.grad_buffer_bytes = 4.0 * psi;     // unsharded fp32 gradients accumulated over the micro-batches
  }
  // Mixed precision: the optimizer step works on an fp32 copy of the local gradient shard.
  m.optimizer_temp_bytes = prec == Precision::FP32 ? 0.0 : 4.0 * psi / s.optimizer_shards;

  const double step_peak = m.activations_bytes + m.gathered_params_bytes + m.grad_buffer_bytes;
  m.buffers_bytes = std::max(m.gathered_params_bytes + m.grad_buffer_bytes, m.optimizer_temp_bytes);
  m.peak_bytes = m.model_states_bytes + std::max(step_peak, m.optimizer_temp_bytes);
  m.capacity_bytes = capacity;
  // Not seen by the framework's allocator: CUDA context and library workspaces (~1 GiB) and
  // allocator fragmentation (5 % of capacity).
  m.reserve_bytes = 1024.0 * 1024.0 * 1024.0 + 0.05 * capacity;
  m.fits = m.peak_bytes <= capacity - m.reserve_bytes;

  // Fully sharded over G GPUs (parameters gathered per unit, as ZeRO-3) the peak is
  // states/G + max(working set, fp32 gradients/G); solve for G. For a gathering strategy the working
  // set is exactly this step's activations + gathered parameters + gradient buffers.
  const double usable = capacity - m.reserve_bytes;
  m.working_set_bytes = m.activations_bytes + pe * live_params + grad_buffer_bytes(true);
  const double states_total = (2.0 * pe + optimizer_bytes_per_param(opt, prec)) * psi;
  const double temp_total = prec == Precision::FP32 ? 0.0 : 4.0 * psi;
  if (m.working_set_bytes < usable) {
    double g = std::max({1.0, std::ceil(states_total / (usable - m.working_set_bytes)), std::ceil((states_total + temp_total) / usable)});
    m.gpus_to_fit = g < 9e15 ? static_cast<int64_t>(g) : 0;
  }
  return m;
}

}  // namespace micsim
