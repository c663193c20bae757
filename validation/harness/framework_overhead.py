#!/usr/bin/env python3
"""Host-side cost of a sharding framework's hooks, measured on this machine's CPU and GPU.

micsim's framework profiles charge the host a time per unit per pass (the module hooks of FSDP or
DeepSpeed: pre-forward unshard, post-forward reshard, pre/post-backward) and a time per collective
launch (strategy.mechanisms.host_per_unit_us / host_per_collective_us; models/catalog/frameworks.yaml).
No framework publishes these. This measures them with the framework itself:

  * a stack of L small Llama-shaped blocks (9 parameter tensors each: q, k, v, o, gate, up, down and
    two norms) at a width where every GPU kernel is a few microseconds, so a pass is host-bound and
    its wall time is the host's time;
  * the same stack plain (no framework) and wrapped per block (FSDP2 fully_shard, FSDP1
    FullyShardedDataParallel), at L = 4, 16, 64; the framework's cost per block per pass is the
    slope in L of (wrapped - plain), fitted by least squares, forward and backward apart;
  * the launch cost of one collective: all_gather_into_tensor and reduce_scatter_tensor issued
    back to back without waiting, host time per call.

One process (world size 1): FSDP2 still all-gathers and reduce-scatters every unit (a one-rank NCCL
collective); FSDP1 switches to NO_SHARD at world size 1 (its hooks run, its collectives do not), so its
figure is a lower bound. Output: CSV rows and a YAML snippet for strategy.mechanisms.

  python3 validation/harness/framework_overhead.py [--out overhead.csv] [--repeats 30]
Exit status 77 when PyTorch or a GPU is missing (nothing measured).
"""
import argparse
import statistics
import sys
import time

from probe_common import SKIPPED, one_rank_process_group, torch_on_gpu, write_result


def least_squares_slope(xs, ys):
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="-")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--width", type=int, default=64)
    args = ap.parse_args()
    torch = torch_on_gpu("framework_overhead")
    if torch is None:
        return SKIPPED
    import torch.nn as nn
    dev = torch.device("cuda", 0)
    dist = one_rank_process_group(torch, 29517)
    d = args.width

    class Block(nn.Module):
        # Llama's nine tensors per block, tiny: what FSDP hooks see is the same count of parameters.
        def __init__(self):
            super().__init__()
            self.attn_norm = nn.Parameter(torch.ones(d))
            self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
            self.mlp_norm = nn.Parameter(torch.ones(d))
            self.gate, self.up, self.down = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False), nn.Linear(2 * d, d, bias=False)

        def forward(self, x):
            h = x * self.attn_norm
            x = x + self.o(self.q(h) * self.k(h) + self.v(h))
            h = x * self.mlp_norm
            return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))

    def stack(n):
        return nn.Sequential(*[Block() for _ in range(n)]).to(dev)

    def wrap(kind, model):
        if kind == "plain":
            return model
        if kind == "fsdp2":
            from torch.distributed.fsdp import fully_shard
            for b in model:
                fully_shard(b)
            fully_shard(model)
            return model
        if kind == "fsdp1":
            import warnings
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            warnings.filterwarnings("ignore")
            return FSDP(model, auto_wrap_policy=lambda module, recurse, nonwrapped_numel: recurse or isinstance(module, Block),
                        device_id=dev, use_orig_params=True)
        raise ValueError(kind)

    x = torch.randn(8, d, device=dev)

    def time_passes(model):
        fwd, bwd = [], []
        for i in range(args.repeats + 5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(x)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            out.sum().backward()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            for p in model.parameters():
                p.grad = None
            if i >= 5:
                fwd.append(t1 - t0)
                bwd.append(t2 - t1)
        return statistics.median(fwd), statistics.median(bwd)

    rows = []
    layers = [4, 16, 64]
    per_kind = {}
    for kind in ["plain", "fsdp2", "fsdp1"]:
        try:
            times = [time_passes(wrap(kind, stack(n))) for n in layers]
        except Exception as e:  # a framework this PyTorch lacks: say so, measure the others
            print(f"framework_overhead: {kind}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        per_kind[kind] = times
        for n, (f, b) in zip(layers, times):
            rows.append((kind, "pass_wall_us", n, "forward", f * 1e6))
            rows.append((kind, "pass_wall_us", n, "backward", b * 1e6))
    slopes = {}
    if "plain" in per_kind:
        for kind in ("fsdp2", "fsdp1"):
            if kind not in per_kind:
                continue
            for p, name in ((0, "forward"), (1, "backward")):
                extra = [(per_kind[kind][i][p] - per_kind["plain"][i][p]) * 1e6 for i in range(len(layers))]
                slopes[(kind, name)] = least_squares_slope(layers, extra)
                rows.append((kind, "per_unit_us", 0, name, slopes[(kind, name)]))

    # Launch cost of one collective (host side, issued back to back, no wait in between).
    launch = {}
    for op in ("all_gather_into_tensor", "reduce_scatter_tensor"):
        inp = torch.randn(1 << 18, device=dev)
        out = torch.empty_like(inp)
        fn = getattr(dist, op)
        for _ in range(50):
            fn(out, inp)
        torch.cuda.synchronize()
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            fn(out, inp)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        launch[op] = (t1 - t0) / n * 1e6
        rows.append(("torch.distributed", "per_collective_us", 1, op, launch[op]))

    lines = ["framework,metric,units,pass,value"] + [f"{k},{m},{n},{p},{v:.2f}" for k, m, n, p, v in rows]
    write_result(args.out, "\n".join(lines) + "\n")
    host = f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}"
    print(f"# measured with {host}, world size 1", file=sys.stderr)
    for kind in ("fsdp2", "fsdp1"):
        if (kind, "forward") in slopes:
            per_pass = (slopes[(kind, "forward")] + slopes[(kind, "backward")]) / 2
            print(f"# {kind}: per unit {slopes[(kind, 'forward')]:.1f} us forward, {slopes[(kind, 'backward')]:.1f} us backward", file=sys.stderr)
            print(f"strategy: {{framework: {kind}, mechanisms: {{host_per_unit_us: {per_pass:.0f}, "
                  f"host_per_collective_us: {statistics.fmean(launch.values()):.0f}}}}}", file=sys.stderr)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
