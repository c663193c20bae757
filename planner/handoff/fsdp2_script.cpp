// train_fsdp2.py: a runnable PyTorch FSDP2 training skeleton for the simulated plan. The mesh is
// (replicate, shard) = (replication group size, partition group size), laid out as micsim's groups
// (partition groups are contiguous ranks); MiCS's 2-hop sync is FSDP2's set_requires_all_reduce(False)
// on all but the last micro-step. Checked against PyTorch 2.6's API (validation/data/handoff-apis/
// torch-fsdp2.json) by scripts/check-handoff.
#include <fmt/format.h>

#include "planner/handoff/handoff.hpp"
#include "sim/simulation.hpp"

namespace micsim {

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
  return s;
}

// Python text of the template below; @NAME@ placeholders are filled in by fsdp2_script().
const char* kTemplate = R"PY(#!/usr/bin/env python3
"""FSDP2 training skeleton written by micsim @MICSIM@ for @DESCRIPTION@.

micsim predicted @PREDICTION@.
Launch on each of the @NODES@ nodes (@GPN@ GPUs each), with HOST the first node's address:
    torchrun --nnodes @NODES@ --nproc-per-node @GPN@ --rdzv-backend c10d --rdzv-endpoint HOST:29500 train_fsdp2.py
Try it first on a CPU (2 processes, a tiny model, gloo):
    torchrun --nproc-per-node 2 train_fsdp2.py --tiny --steps 2

Targets PyTorch >= @TORCH@ (torch.distributed.fsdp.fully_shard). The model is a Llama-style decoder with
the simulated model's sizes (no rotary embedding: add yours) fed synthetic tokens: replace the batches
with your data loader. @NOTE@
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

# The simulated plan (micsim strategy.kind @STRATEGY@).
PLAN = {
    "replicate": @REPLICATE@,  # copies of the model states: the replication group size
    "shard": @SHARD@,  # GPUs that share one copy: the partition group size
    "micro_batch": @MICRO_BATCH@,
    "grad_accumulation_steps": @ACCUMULATION@,
    "seq_len": @SEQ_LEN@,
    "param_dtype": "@PARAM_DTYPE@",
    "reduce_dtype": "@REDUCE_DTYPE@",
    "reshard_after_forward": @RESHARD@,  # False: ZeRO-2 / SHARD_GRAD_OP keeps gathered parameters for backward
    "defer_all_reduce": @DEFER@,  # MiCS 2-hop sync: reduce-scatter each micro-step, all-reduce once per step
    "checkpoint_every": @CHECKPOINT_EVERY@,  # activation checkpointing of every k-th block (0 = none)
    "prefetch_blocks": @PREFETCH@,  # blocks whose all-gather is issued ahead of the one computing
    "optimizer_implementation": "@OPTIMIZER_IMPL@",  # AdamW's update: fused (one kernel) or foreach, as simulated
    "predicted_tokens_per_s": @PREDICTED_TPS@,
}
MODEL = {"layers": @LAYERS@, "hidden": @HIDDEN@, "heads": @HEADS@, "kv_heads": @KV_HEADS@, "ffn": @FFN@, "vocab": @VOCAB@}
TINY = {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 256}
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    """Pre-norm causal attention (grouped-query) and a SwiGLU MLP."""

    def __init__(self, c):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c["heads"], c["kv_heads"], c["hidden"] // c["heads"]
        self.attn_norm, self.mlp_norm = RMSNorm(c["hidden"]), RMSNorm(c["hidden"])
        self.wq = nn.Linear(c["hidden"], c["heads"] * self.head_dim, bias=False)
        self.wkv = nn.Linear(c["hidden"], 2 * c["kv_heads"] * self.head_dim, bias=False)
        self.wo = nn.Linear(c["heads"] * self.head_dim, c["hidden"], bias=False)
        self.w_gate_up = nn.Linear(c["hidden"], 2 * c["ffn"], bias=False)
        self.w_down = nn.Linear(c["ffn"], c["hidden"], bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.wkv(h).view(b, s, 2, self.kv_heads, self.head_dim).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        if self.kv_heads != self.heads:
            k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
            v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, -1))
        gate, up = self.w_gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.w_down(F.silu(gate) * up)


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed = nn.Embedding(c["vocab"], c["hidden"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"])
        self.head = nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))

    def init_weights(self):
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            elif isinstance(m, RMSNorm):
                nn.init.ones_(m.weight)


def mesh_shape(world):
    """(replicate, shard) of the plan; a smaller trial run (--tiny) keeps as much sharding as fits."""
    replicate, shard = PLAN["replicate"], PLAN["shard"]
    if replicate * shard != world:
        shard = max(d for d in range(1, world + 1) if world % d == 0 and d <= shard)
        replicate = world // shard
    return replicate, shard


def build(args, device):
    world = dist.get_world_size()
    replicate, shard = mesh_shape(world)
    kind = device.type
    if replicate == 1:
        mesh = init_device_mesh(kind, (shard,), mesh_dim_names=("shard",))
    else:  # HSDP: shard inside each partition group, replicate across them (contiguous ranks share a shard group)
        mesh = init_device_mesh(kind, (replicate, shard), mesh_dim_names=("replicate", "shard"))
    c = TINY if args.tiny else MODEL
    with torch.device("meta"):
        model = Transformer(c)
    if args.tiny:  # CPU kernels: full precision
        mp = MixedPrecisionPolicy()
    else:
        mp = MixedPrecisionPolicy(param_dtype=DTYPES[PLAN["param_dtype"]], reduce_dtype=DTYPES[PLAN["reduce_dtype"]])
    every = PLAN["checkpoint_every"]
    for i in range(len(model.blocks)):
        if every > 0 and i % every == 0:
            model.blocks[i] = checkpoint_wrapper(model.blocks[i], checkpoint_impl=CheckpointImpl.NO_REENTRANT)
        fully_shard(model.blocks[i], mesh=mesh, reshard_after_forward=PLAN["reshard_after_forward"], mp_policy=mp)
    fully_shard(model, mesh=mesh, reshard_after_forward=PLAN["reshard_after_forward"], mp_policy=mp)
    blocks = list(model.blocks)
    k = PLAN["prefetch_blocks"]
    if k > 1:  # FSDP2 prefetches one block by itself
        for i, block in enumerate(blocks):
            block.set_modules_to_forward_prefetch(blocks[i + 1:i + 1 + k])
            block.set_modules_to_backward_prefetch(list(reversed(blocks[max(0, i - k):i])))
    model.to_empty(device=device)
    model.init_weights()
    return model, c, replicate, shard


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--tiny", action="store_true", help="a tiny model on CPU with gloo, to check the set-up")
    args = parser.parse_args()
    use_cuda = torch.cuda.is_available() and not args.tiny
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    if use_cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    model, c, replicate, shard = build(args, device)
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"mesh (replicate, shard) = ({replicate}, {shard}) on {world} ranks; plan: ({PLAN['replicate']}, {PLAN['shard']})")
    # The update micsim simulated: torch's own default on CUDA would be foreach (84 bytes per parameter
    # against the fused kernel's 32). The tiny CPU check runs foreach.
    implementation = PLAN["optimizer_implementation"] if use_cuda else "foreach"
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, **{implementation: True})
    micro_batch = 2 if args.tiny else PLAN["micro_batch"]
    seq_len = 16 if args.tiny else PLAN["seq_len"]
    accumulation = 2 if args.tiny else PLAN["grad_accumulation_steps"]
    for step in range(args.steps):
        start = time.perf_counter()
        for micro in range(accumulation):
            last = micro == accumulation - 1
            if PLAN["defer_all_reduce"] and replicate > 1:
                model.set_requires_all_reduce(last)
            tokens = torch.randint(0, c["vocab"], (micro_batch, seq_len + 1), device=device)
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten()) / accumulation
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if use_cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        if rank == 0:
            rate = micro_batch * seq_len * accumulation * world / seconds
            print(f"step {step}: loss {loss.item() * accumulation:.4f}, {seconds:.3f} s, {rate:.0f} tokens/s "
                  f"(micsim predicted {PLAN['predicted_tokens_per_s']:.0f} for the full model)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
)PY";

const char* dtype_name(Precision p) {
  switch (p) {
    case Precision::BF16: return "bfloat16";
    case Precision::FP16: return "float16";
    default: return "float32";
  }
}

}  // namespace

std::string fsdp2_script(const Scenario& sc, const SimulationResult* predicted) {
  const auto& s = sc.strategy;
  const ParallelLayout l = make_layout(s, sc.cluster.nodes, sc.cluster.instance.gpus_per_node, sc.parallelism);
  const ModelSpec& m = sc.model;
  // FSDP2 expresses DDP as a shard dimension of 1, ZeRO-1/2 as sharding without resharding after forward.
  int replicate = l.replication_size, shard = l.partition_size;
  std::string note;
  switch (s.kind) {
    case StrategyKind::DDP: replicate = sc.data_parallel_size(), shard = 1; break;
    case StrategyKind::Zero1:
    case StrategyKind::Zero2:
    case StrategyKind::Zero3: replicate = 1, shard = sc.data_parallel_size(); break;
    default: break;
  }
  if (s.kind == StrategyKind::Zero1) note = "FSDP2 has no ZeRO-1: parameters and gradients are sharded too (as zero2).";
  if (s.kind == StrategyKind::MiCS && l.hierarchical)
    note = "FSDP2 has no hierarchical all-gather: MiCS's inter-node gather runs as one flat all-gather (simulate "
           "strategy.kind=hsdp with framework fsdp2 for its prediction).";
  const bool defer = (s.kind == StrategyKind::MiCS || s.kind == StrategyKind::HSDP) && s.two_hop_sync;
  const bool reshard = !(s.kind == StrategyKind::Zero1 || s.kind == StrategyKind::Zero2);
  int every = 0;
  if (sc.training.checkpointing == Checkpointing::Full) every = 1;
  if (sc.training.checkpointing == Checkpointing::SelectiveLayer) every = std::max(1, sc.training.checkpoint_every);
  if (sc.training.checkpointing == Checkpointing::SelectiveOp || sc.training.checkpointing == Checkpointing::TorchtitanOp) {
    every = 1;
    note += std::string(note.empty() ? "" : " ") + "Selective per-op checkpointing (selective-op, torchtitan-op) is written as full block checkpointing here.";
  }
  const int prefetch = s.framework && s.framework->prefetch_units > 0 ? s.framework->prefetch_units : 1;
  std::string prediction = "nothing (no simulation given)";
  double tps = 0;
  if (predicted) {
    tps = predicted->tokens_per_s;
    prediction = fmt::format("{:.0f} tokens/s ({:.3f} s per step; 90 % interval {:.0f}-{:.0f} tokens/s) with framework {}",
                             predicted->tokens_per_s, predicted->iteration_time_s, predicted->tokens_per_s_low,
                             predicted->tokens_per_s_high, predicted->framework);
  }
  const Precision p = sc.training.precision;
  std::string t = kTemplate;
  const std::vector<std::pair<std::string, std::string>> values = {
      {"@MICSIM@", MICSIM_VERSION},
      {"@DESCRIPTION@", fmt::format("{} x {} ({} GPUs), {} {}", sc.cluster.nodes, sc.cluster.instance.name, l.world,
                                    m.name.empty() ? "model" : m.name, to_string(s.kind))},
      {"@PREDICTION@", prediction},
      {"@NODES@", std::to_string(sc.cluster.nodes)},
      {"@GPN@", std::to_string(sc.cluster.instance.gpus_per_node)},
      {"@TORCH@", kHandoffTorch},
      {"@NOTE@", note},
      {"@STRATEGY@", to_string(s.kind)},
      {"@REPLICATE@", std::to_string(replicate)},
      {"@SHARD@", std::to_string(shard)},
      {"@MICRO_BATCH@", std::to_string(sc.training.micro_batch)},
      {"@ACCUMULATION@", std::to_string(sc.grad_accumulation_steps())},
      {"@SEQ_LEN@", std::to_string(sc.training.seq_len)},
      {"@PARAM_DTYPE@", dtype_name(p)},
      // The reduction precision micsim simulated (strategy.reduce_dtype; unset = the training precision).
      {"@REDUCE_DTYPE@", dtype_name(s.reduce_precision.value_or(p))},
      {"@RESHARD@", reshard ? "True" : "False"},
      {"@DEFER@", defer ? "True" : "False"},
      {"@CHECKPOINT_EVERY@", std::to_string(every)},
      {"@PREFETCH@", std::to_string(prefetch)},
      {"@OPTIMIZER_IMPL@", to_string(optimizer_implementation_of(sc))},
      {"@PREDICTED_TPS@", fmt::format("{:.1f}", tps)},
      {"@LAYERS@", std::to_string(m.layers)},
      {"@HIDDEN@", std::to_string(m.hidden)},
      {"@HEADS@", std::to_string(m.heads)},
      {"@KV_HEADS@", std::to_string(m.kv_heads > 0 ? m.kv_heads : m.heads)},
      {"@FFN@", std::to_string(m.ffn)},
      {"@VOCAB@", std::to_string(m.vocab)},
  };
  for (const auto& [k, v] : values) t = replace_all(t, k, v);
  return t;
}

}  // namespace micsim
