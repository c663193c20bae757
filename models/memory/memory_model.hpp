#pragma once
// Bytes per GPU for one training step: model states (sharded as the strategy says), the buffers a
// sharded step needs (gathered parameters, gradient buckets, the optimizer's fp32 gradient copy),
// activations (with or without per-layer checkpointing), and a runtime reserve. Pure function of its
// inputs, so every term can be checked against its formula.
#include <string>

#include "models/compute/compute_model.hpp"
#include "models/workload/workload.hpp"

namespace micsim {

// How a strategy spreads model states and what it keeps in flight. Filled in by sim/strategy.
struct ShardingSpec {
  int param_shards = 1;           // parameters split over this many GPUs (ZeRO-3: N, MiCS: p)
  int grad_shards = 1;
  int optimizer_shards = 1;
  bool gathers_parameters = false;// parameters gathered per unit before use (ZeRO-3, MiCS, FSDP)
  int prefetch_units = 1;         // units gathered ahead of the one computing
  double max_live_parameters = 1e9;   // DeepSpeed stage3_max_live_parameters (elements)
  double grad_bucket_elements = 5e8;  // gradient elements buffered before a reduction
  int grad_buckets_in_flight = 1;
  int reduce_bytes_per_element = 0;  // gradient reductions' precision (strategy.reduce_dtype; 0 = the training precision)
  double reduce_element_bytes(double training_bytes) const {
    return reduce_bytes_per_element > 0 ? reduce_bytes_per_element : training_bytes;
  }
  // torchtitan's FSDP2 under pipeline parallelism keeps parameters unsharded from the first forward to
  // the step's end (reshard_after_forward "default" = not pp_enabled) and accumulates unsharded
  // gradients in fp32 until the last micro-batch: the whole stage's parameters and gradients are held.
  bool unsharded_through_step = false;
  // FSDP SHARD_GRAD_OP (ZeRO-2 under fsdp1/fsdp2): parameters are sharded at rest and gathered per unit
  // in each forward, and every unit stays gathered until its backward, so at the turn from forward to
  // backward the whole (rank's) model is held unsharded besides its shard.
  bool gathered_through_backward = false;
};

struct MemoryEstimate {
  double params_bytes = 0, grads_bytes = 0, optimizer_bytes = 0;
  double model_states_bytes = 0;
  double activations_bytes = 0;
  double gathered_params_bytes = 0, grad_buffer_bytes = 0, optimizer_temp_bytes = 0;
  double buffers_bytes = 0;        // gathered params + gradient buffers (the step's peak), or the optimizer temp
  double peak_bytes = 0;           // what the framework allocates at its peak
  // What PyTorch's caching allocator has reserved at its peak (torch.cuda.max_memory_reserved, the
  // figure torchtitan logs as "memory"): the peak plus freed blocks it holds but cannot reuse there.
  double allocator_reserved_bytes = 0;
  double capacity_bytes = 0;       // GPU memory
  double reserve_bytes = 0;        // CUDA context, cuBLAS/NCCL workspaces, allocator fragmentation
  bool fits = false;
  // Why it fits or not: the per-GPU working set that sharding cannot shrink (activations of one
  // micro-batch, gathered parameters, gradient buckets), and the fewest GPUs the model states must
  // be fully sharded over for the step to fit with this micro-batch and checkpointing (0: none is
  // enough, the working set alone exceeds memory).
  double working_set_bytes = 0;
  int64_t gpus_to_fit = 0;
  double headroom_bytes() const { return capacity_bytes - reserve_bytes - peak_bytes; }
};

struct ActivationOptions {
  Checkpointing checkpointing = Checkpointing::None;  // what each block keeps (see Checkpointing)
  int checkpoint_every = 1;
  bool flash_attention = false;
  double in_flight_micro_batches = 1;  // pipeline parallelism: micro-batches whose activations a stage holds
  CrossEntropy cross_entropy = CrossEntropy::Fused;  // what the loss allocates (loss_bytes_per_logit)
  bool logits_kept_through_backward = false;         // the trainer still references the logits (Composer's state.outputs)
};

// Bytes of stored activations for one transformer block and one micro-batch (Korthikanti et al. 2022,
// arXiv 2205.05198, generalised to GQA, SwiGLU, any FFN width, no dropout and fused attention).
double block_activation_bytes(const ModelSpec& m, int64_t micro_batch, int64_t seq_len, Precision p, bool flash);
// The same for one rank of a model-parallel group (Korthikanti et al. 2022, §4.2): the GEMM inputs and
// outputs inside the tensor-parallel region and the attention scores split by tp; the norms, the block's
// and MLP's inputs and the dropout masks (10·s·b·h bytes in 16-bit) split only with sequence
// parallelism; context parallelism keeps s/cp of the tokens (and s/cp x s scores).
double rank_block_activation_bytes(const ModelSpec& m, int64_t micro_batch, int64_t seq_len, Precision p, bool flash,
                                   const ModelParallelism& mp);
// The part of a block's activations that selective (attention-core) recomputation drops: the s x s
// scores, softmax and dropout (5·a·s²·b bytes in 16-bit), or only the fp32 log-sum-exp with
// FlashAttention (which is why selective recomputation saves little memory there).
double attention_core_activation_bytes(const ModelSpec& m, int64_t micro_batch, int64_t seq_len, Precision p, bool flash);
// What torchtitan's per-op checkpointing (Checkpointing::TorchtitanOp) keeps of one block on one rank
// until its backward: the block's input and the outputs of the matmuls, attention and reduce-scatters
// its save list names.
double torchtitan_op_kept_bytes(const ModelSpec& m, int64_t micro_batch, int64_t seq_len, Precision p, bool flash,
                                const ModelParallelism& mp);
// Bytes kept for the embedding and head (logits in 16-bit plus the fp32 softmax of the loss).
double head_activation_bytes(const ModelSpec& m, int64_t micro_batch, int64_t seq_len, Precision p, const ModelParallelism& mp = {},
                             CrossEntropy ce = CrossEntropy::Fused);
// Bytes per logit the caching allocator still holds, freed, at the loss's peak (the 16-bit logits' block
// under eager F.cross_entropy(logits.float())); 0 where nothing is freed or the freed block is reused.
double loss_cached_bytes_per_logit(CrossEntropy ce, Precision p);
// Bytes per logit alive at the loss's peak (the logits, their fp32 copy and what the cross-entropy
// allocates), for this rank's share of the vocabulary (vocabulary-parallel when tp > 1).
double loss_bytes_per_logit(CrossEntropy ce, Precision p, bool vocab_parallel);

// Bytes per parameter of optimizer state (fp32 master copy when mixed precision, plus moments).
double optimizer_bytes_per_param(Optimizer opt, Precision p);

MemoryEstimate estimate_memory(const Workload& w, const ShardingSpec& s, const ActivationOptions& a,
                               Optimizer opt, double gpu_capacity_bytes);

}  // namespace micsim
