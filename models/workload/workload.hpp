#pragma once
// The work of one micro-step, per sharding unit: embedding, each transformer block, the head.
// Each unit lists its forward and backward GEMM shapes, attention FLOPs and memory-bound bytes;
// compute cost (models/compute) turns those into seconds.
#include <cstdint>
#include <string>
#include <vector>

#include "models/hardware/hardware.hpp"
#include "models/workload/model_spec.hpp"
#include "models/workload/parallelism.hpp"

namespace micsim {

struct Gemm {
  int64_t m = 0, n = 0, k = 0;  // C[m x n] = A[m x k] * B[k x n]
  int64_t batch = 1;
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }
};

struct PassWork {
  std::vector<Gemm> gemms;        // dense weight GEMMs
  bool fp8_gemms = false;         // run in FP8 (precision: fp8; blocks only, as Transformer Engine / torchao do)
  double attention_flops = 0;     // QK^T and softmax·V in one fused kernel (FlashAttention/SDPA), counted non-causal
  std::vector<Gemm> score_gemms;  // QK^T and P·V as cuBLAS batched GEMMs when the s x s scores are materialised
  bool causal = false;            // causal mask: attention kernels skip the masked half
  int64_t attention_seq = 0;      // sequence length the fused kernel runs at (its rate depends on it; 0 = long)
  double elementwise_bytes = 0;   // norms, activations, softmax, dropout, residuals (HBM traffic)
  double eager_bytes = 0;         // extra traffic of eager (uncompiled) ops, scaled by the calibration
  int kernels = 0;                // kernel launches (fixed overhead each)
  double flops() const;
  bool empty() const {
    return gemms.empty() && score_gemms.empty() && attention_flops == 0 && elementwise_bytes == 0 && eager_bytes == 0 && kernels == 0;
  }
};

enum class UnitKind { Embedding, Block, Head };

enum class Fp8Recipe { Dynamic, Delayed };

// Activation checkpointing policy (training.activation_checkpointing):
//   none
//   full             every block keeps only its input and recomputes its forward in backward
//   selective-op     every block recomputes its attention core only (QK^T, softmax, P.V: Korthikanti et
//                    al. 2022, arXiv 2205.05198, "selective activation recomputation")
//   selective-layer  every k-th block (checkpoint_every) is checkpointed in full, the others keep
//                    everything (torchtitan activation_checkpoint.mode selective, selective_ac_option k)
//   torchtitan-op    torchtitan's per-op policy (mode selective, selective_ac_option "op"): every block
//                    keeps the outputs of its odd-numbered matmuls (Llama: wq, wv, w1, w2), of attention and
//                    of reduce-scatters, and recomputes the rest (wk, wo, w3 and every elementwise op);
//                    FP8 linears count alike: the policy's dispatch mode sees aten.mm before the float8
//                    tensor subclass turns it into torch._scaled_mm
//                    (torchtitan/parallelisms/parallelize_llama.py _save_list, Apr 2024 - mid 2025)
enum class Checkpointing { None, Full, SelectiveOp, SelectiveLayer, TorchtitanOp };
const char* to_string(Checkpointing c);

// How the training script computes the cross-entropy over the vocabulary: what the loss holds in
// memory at its peak (models/memory/memory_model.cpp, loss_bytes_per_logit).
//   fused  Megatron-LM's vocab_parallel_cross_entropy: one fp32 copy of the logits, softmax and its
//          gradient computed in place in it
//   torch  F.cross_entropy(logits.float()), as torchtitan and Hugging Face models call it: the fp32
//          copy, the log-softmax output and each gradient are separate tensors (with tp > 1, DTensor
//          loss_parallel's decomposition adds the shifted logits and their exponential)
//   compiled  the same call under torch.compile (torchtitan with training.compile from bbb1b616,
//          2025-04-02): the 16-bit logits kept, the 16-bit gradient written, fp32 only in registers
enum class CrossEntropy { Fused, Torch, Compiled };
const char* to_string(CrossEntropy c);
// HBM bytes the loss reads and writes per logit, in its forward and in its backward.
struct LossTraffic {
  double forward = 0, backward = 0;
};
LossTraffic loss_traffic_per_logit(CrossEntropy ce, Precision p, bool vocab_parallel);

struct UnitWork {
  UnitKind kind = UnitKind::Block;
  int index = 0;                 // position in the unit list
  int layer = -1;                // Block: its layer in the model (0 .. L-1)
  int64_t params = 0;            // parameters owned (sharded, reduced, updated)
  int64_t gather_params = 0;     // parameters needed whole for this unit's compute (adds tied weights)
  int64_t fp8_gather_params = 0; // of those, gathered in FP8 (strategy.fp8_all_gather: the block's linear weights)
  // Bytes of one whole gather: FP8 weights at 1 byte, the rest at the training precision's `pe`.
  double gather_bytes(double pe) const { return pe * double(gather_params - fp8_gather_params) + double(fp8_gather_params); }
  // The parameter tensors a framework sees, in module order (weights, biases, norms); they sum to
  // `params`. Frameworks that gather per tensor (DeepSpeed <= 0.5) issue one collective for each.
  std::vector<int64_t> tensors;
  PassWork forward;
  PassWork backward;             // excludes recompute
  PassWork recompute;            // what backward recomputes first (empty: nothing)
  bool recompute_whole_block = false;  // the whole block is checkpointed: it replays its tensor-parallel collectives
  bool recompute_stops_early = false;  // ... up to the MLP down projection (early_stopped_recompute): not the one after it
};

struct WorkloadOptions {
  int64_t micro_batch = 1;       // sequences
  int64_t seq_len = 1;
  Precision precision = Precision::FP16;
  bool flash_attention = false;  // fused attention: no s x s matrices in HBM
  bool fused_kernels = true;     // fused activation / bias / scale kernels; false = eager PyTorch (e.g. minGPT)
  bool eager_attention = false;  // materialised attention as eager PyTorch ops (HF/NVIDIA BERT, bing_bert): transposed
                                 // copies of q, k, v and the context, scale and mask as passes of their own
  bool compile = false;          // torch.compile: elementwise ops fused, fewer launches
  bool fp8 = false;              // block GEMMs in FP8 (casts are extra memory-bound work)
  bool fp8_all_gather = false;   // (only with fp8) weights gathered in FP8, cast once per gather on the local shard
  // (only with fp8) how the scales are found, which sets the casts' HBM traffic (fp8_forward_cast_bytes):
  //   dynamic  the current tensor's amax first, then a scaled cast (torchao Float8Linear tensorwise,
  //            Transformer Engine current scaling); backward casts again what its GEMMs read
  //   delayed  Transformer Engine DelayedScaling: the scale comes from an amax history, so one fused
  //            cast-transpose pass (amax recorded on the way) makes the FP8 tensor and the transposed copy
  //            the backward's GEMMs read; backward casts only the incoming gradient
  Fp8Recipe fp8_recipe = Fp8Recipe::Dynamic;
  int weight_shards = 1;         // GPUs a weight is sharded over (the shard each rank casts before gathering)
  CrossEntropy cross_entropy = CrossEntropy::Fused;  // how the loss is computed (its HBM traffic)
  Checkpointing checkpointing = Checkpointing::None;
  int checkpoint_every = 1;
  // A block checkpointed in full stops its recomputation at the last tensor its backward needs (PyTorch's
  // non-reentrant checkpoint since 2.1, and torch.compile's partitioner): see early_stopped_recompute.
  bool recompute_early_stop = false;
  ModelParallelism mp;           // tp/cp split each unit's work; pp selects the stage (see build_workload)
  int stage = -1;                // with pp > 1: the pipeline stage built (0 = first); -1 = the last
};

struct Workload {
  ModelSpec model;
  ParamCounts params;
  WorkloadOptions options;
  std::vector<UnitWork> units;   // [embedding, block 0..L-1, head]; with pp > 1 the stage's: the first has the
                                 // embedding, the last the head (and a copy of tied embeddings)
  int stage = 0;                 // pipeline stage (0 without pipelining)
  int64_t rank_params = 0;       // parameters one model-parallel rank holds before data-parallel sharding (= params.total without tp/pp)
  int64_t rank_block_params = 0; // of one block on this rank (= params.per_layer / tp)
  int stage_layers = 0;          // blocks on this rank's stage
  // Model-parallel communication of one block and one micro-batch, bytes per collective (nccl-tests
  // convention): tensor-parallel activations (all-reduce, or all-gather + reduce-scatter with sequence
  // parallelism) and the ring-attention key/value exchange (context parallelism).
  double tp_activation_bytes = 0;
  double cp_kv_bytes = 0;
  double pp_activation_bytes = 0;  // sent from one stage to the next per micro-batch (scatter/gather: / tp)
  int first_block() const;       // index of the first Block unit
  int64_t tokens_per_micro_step() const { return options.micro_batch * options.seq_len; }
  double forward_flops() const;  // sum over units, one micro-step
  double backward_flops() const;
};

Workload build_workload(const ModelSpec& model, const WorkloadOptions& opt);

// The weights of one block's linear layers (no biases, no norms): what FP8 recipes run in FP8.
int64_t block_linear_weights(const ModelSpec& m);

// Parameter tensors of one block, as the model code declares them (HF BERT/RoBERTa and Llama: separate
// Q, K, V; GPT-2: one fused QKV), summing to ParamCounts::per_layer.
std::vector<int64_t> block_tensors(const ModelSpec& m);

// FLOP conventions for reporting (docs/reference/nccl-and-compute.md §4.3):
// model FLOPs per token = 6·N + 12·L·h·s (PaLM / llm-foundry: attention counted non-causal, no recompute);
// with full activation recomputation the hardware does 8·N + 16·L·h·s.
double model_flops_per_token(const ModelSpec& m, const ParamCounts& p, int64_t seq_len);
// Hardware FLOPs per token add what the checkpointing policy recomputes (full: the blocks' forward,
// 2·N + 4·L·h·s; selective-op: the attention core, 4·L·h·s; selective-layer: the forward of the
// checkpointed blocks), less the MLP down projection of each checkpointed block when the recompute stops
// early (skips_mlp_down: recompute_skips_mlp_down).
double hardware_flops_per_token(const ModelSpec& m, const ParamCounts& p, int64_t seq_len, Checkpointing c, int every = 1,
                                bool skips_mlp_down = false);
// Whether a block recomputed in full stops before its MLP down projection (early stop on, and not an FP8
// linear run eagerly: a custom autograd Function saves after its GEMM).
bool recompute_skips_mlp_down(const WorkloadOptions& o);
// Blocks that a policy checkpoints in full (selective-layer: every k-th, starting with block 0).
bool block_checkpointed(Checkpointing c, int every, int layer);

}  // namespace micsim
