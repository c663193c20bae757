#!/usr/bin/env python3
"""One GPU's training step of a Llama-shaped model, measured, for comparison with `micsim simulate`.

A Llama decoder (RMSNorm, rotary embeddings, grouped-query attention through
scaled_dot_product_attention, SwiGLU MLP, untied embedding and output head) written here, random
weights and tokens, trained as torchtitan trains on one GPU: FSDP2 `fully_shard` per block and on the
root (world size 1), MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), fp32 master weights,
AdamW (foreach, or --optimizer fused), cross-entropy on fp32 logits, optional non-reentrant full activation checkpointing per block.
Eager (no torch.compile). Prints and writes (CSV) the median step time, tokens per second and the
allocator's peak allocated and reserved memory, for each configuration given.

  python3 validation/harness/train_step.py --config NAME:layers:hidden:heads:kv_heads:ffn:vocab:seq:micro_batch:ac:attn [...]
      ac: none | full;  attn: cudnn | flash;  an optional 12th field "compile": torch.compile per block
  (micsim: the same model and training keys, cluster of one GPU, strategy zero3 + framework fsdp2)
Exit status 77 when PyTorch or a GPU is missing.
"""
import argparse
import os
import statistics
import sys
import time

from probe_common import SKIPPED, one_rank_process_group, torch_on_gpu, write_result


def build(torch, nn, F, layers, hidden, heads, kv_heads, ffn, vocab, seq, attn_backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    head_dim = hidden // heads
    backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[attn_backend]
    inv = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
    cos, sin = angles.cos().cuda(), angles.sin().cuda()

    def rotate(x):  # x: (batch, seq, heads, head_dim); pairs (even, odd) rotated by position
        even, odd = x[..., 0::2].float(), x[..., 1::2].float()
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        return torch.stack((even * c - odd * s, even * s + odd * c), dim=-1).flatten(-2).type_as(x)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.wq = nn.Linear(hidden, heads * head_dim, bias=False)
            self.wk = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.wv = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.wo = nn.Linear(heads * head_dim, hidden, bias=False)

        def forward(self, x):
            b, s, _ = x.shape
            q = rotate(self.wq(x).view(b, s, heads, head_dim))
            k = rotate(self.wk(x).view(b, s, kv_heads, head_dim))
            v = self.wv(x).view(b, s, kv_heads, head_dim)
            rep = heads // kv_heads  # grouped-query attention: each key/value head serves rep query heads
            k = k[:, :, :, None, :].expand(b, s, kv_heads, rep, head_dim).reshape(b, s, heads, head_dim)
            v = v[:, :, :, None, :].expand(b, s, kv_heads, rep, head_dim).reshape(b, s, heads, head_dim)
            with sdpa_kernel(backend):
                o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            return self.wo(o.transpose(1, 2).reshape(b, s, heads * head_dim))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_norm, self.ffn_norm = nn.RMSNorm(hidden, eps=1e-5), nn.RMSNorm(hidden, eps=1e-5)
            self.attention = Attention()
            self.w1, self.w3 = nn.Linear(hidden, ffn, bias=False), nn.Linear(hidden, ffn, bias=False)
            self.w2 = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x):
            x = x + self.attention(self.attention_norm(x))
            h = self.ffn_norm(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(vocab, hidden)
            self.layers = nn.ModuleList(Block() for _ in range(layers))
            self.norm = nn.RMSNorm(hidden, eps=1e-5)
            self.output = nn.Linear(hidden, vocab, bias=False)

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h)
            return self.output(self.norm(h))

    return Llama, Block


def measure(torch, args, spec):
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    fields = spec.split(":")
    compiled = len(fields) == 12 and fields[11] == "compile"
    name, layers, hidden, heads, kv_heads, ffn, vocab, seq, mb, ac, attn = fields[:11]
    name += ("-compiled" if compiled else "") + ("-fusedadam" if args.optimizer == "fused" else "")
    layers, hidden, heads, kv_heads, ffn, vocab, seq, mb = map(int, (layers, hidden, heads, kv_heads, ffn, vocab, seq, mb))
    Llama, Block = build(torch, nn, F, layers, hidden, heads, kv_heads, ffn, vocab, seq, attn)
    with torch.device("cuda"):
        model = Llama()
    if ac == "full":
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
        for i, layer in enumerate(model.layers):
            model.layers[i] = checkpoint_wrapper(layer, checkpoint_impl=CheckpointImpl.NO_REENTRANT, preserve_rng_state=False)
    if compiled:  # per block, after checkpointing and before sharding, as torchtitan applies it
        for i, layer in enumerate(model.layers):
            model.layers[i] = torch.compile(layer)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    params = sum(p.numel() for p in model.parameters())
    # foreach: torch.optim.AdamW's default on CUDA; fused: one kernel (torchtitan's default).
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **{args.optimizer: True})
    tokens = torch.randint(0, vocab, (mb, seq + 1), device="cuda")
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step():
        logits = model(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        del logits
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    if args.profile_out:
        profile_step(torch, step, name, args.profile_out, args.profile_top)
    row = (name, params, layers, hidden, heads, kv_heads, ffn, vocab, seq, mb, ac, attn, t, mb * seq / t,
           torch.cuda.max_memory_allocated() / 2**30, torch.cuda.max_memory_reserved() / 2**30, min(times), max(times))
    del model, opt
    torch.cuda.empty_cache()
    return row


# Kernel time per step by kind, from the CUDA kernels' names (what micsim's compute model adds up:
# GEMMs, attention, elementwise and normalisation traffic, the loss, the optimizer, copies, NCCL).
KINDS = (("attention", ("fmha", "flash", "sdpa", "attn")), ("gemm", ("nvjet", "gemm", "xmma", "cutlass", "cublas")),
         ("nccl", ("nccl",)), ("copy", ("copy", "memcpy", "memset", "cat", "split")), ("optimizer", ("multi_tensor", "adam")),
         ("loss", ("softmax", "nll", "cross_entropy")), ("norm", ("norm",)))


def kind_of(kernel):
    k = kernel.lower()
    for kind, words in KINDS:
        if any(w in k for w in words):
            return kind
    return "elementwise"


def profile_step(torch, step, label, path, top_path="", steps=2):
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    totals = {}
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", 0) or getattr(e, "self_cuda_time_total", 0)
        if us > 0:
            kind = kind_of(e.key)
            totals[kind] = totals.get(kind, 0.0) + us / 1e3 / steps
            totals["kernels:" + kind] = totals.get("kernels:" + kind, 0) + e.count / steps
    if top_path:  # the kernels themselves, longest first: what each kind is made of
        kernels = sorted((e for e in prof.key_averages() if (getattr(e, "self_device_time_total", 0) or 0) > 0),
                         key=lambda e: -e.self_device_time_total)
        fresh = not os.path.exists(top_path)
        with open(top_path, "a") as f:
            if fresh:
                f.write("config,kind,ms_per_step,calls_per_step,kernel\n")
            for e in kernels[:40]:
                name = e.key.replace('"', "'")[:200]
                f.write(f'{label},{kind_of(e.key)},{e.self_device_time_total / 1e3 / steps:.3f},{e.count / steps:.0f},"{name}"\n')
    name = label
    new = not os.path.exists(path)
    with open(path, "a") as f:
        if new:
            f.write("config,kind,ms_per_step,kernels_per_step\n")
        for kind in sorted(k for k in totals if not k.startswith("kernels:")):
            f.write(f"{name},{kind},{totals[kind]:.3f},{totals['kernels:' + kind]:.0f}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", action="append", required=True)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--out", default="-")
    ap.add_argument("--optimizer", choices=("foreach", "fused"), default="foreach", help="AdamW implementation")
    ap.add_argument("--profile-top", default="", help="with --profile-out: the 40 longest kernels per configuration (CSV, appended)")
    ap.add_argument("--profile-out", default="", help="also profile two steps per configuration: kernel time by kind (CSV, appended)")
    args = ap.parse_args()
    torch = torch_on_gpu("train_step")
    if torch is None:
        return SKIPPED
    dist = one_rank_process_group(torch, 29519)
    header = ("name,params,layers,hidden,heads,kv_heads,ffn,vocab,seq_len,micro_batch,activation_checkpointing,attention,"
              "step_s,tokens_per_s,peak_allocated_gib,peak_reserved_gib,min_step_s,max_step_s")
    lines = [header]
    for spec in args.config:
        try:
            row = measure(torch, args, spec)
        except Exception as e:  # one configuration failing (out of memory, a backend missing) leaves the others
            print(f"train_step: {spec}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
            torch.cuda.empty_cache()
            continue
        line = ",".join(f"{v:.5g}" if isinstance(v, float) else str(v) for v in row)
        print(f"# {line}", file=sys.stderr)
        lines.append(line)
    write_result(args.out, "\n".join(lines) + "\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
