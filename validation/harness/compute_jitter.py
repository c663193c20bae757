#!/usr/bin/env python3
"""How much one GPU's compute time varies from one identical iteration to the next.

micsim's jitter model (docs/model.md sec 2.6) gives each rank's compute a spread (jitter_cv) and makes
every collective wait for the slowest of its members. This measures the part of that spread a single
GPU contributes: the same MLP block (forward and backward, bf16, Llama-3-8B's width: 8192 tokens x
4096 -> 14336 -> 4096) run --iters times back to back, each iteration timed with CUDA events.
Writes every iteration's time (CSV) and prints mean, standard deviation, coefficient of variation,
and the median, 99th percentile and maximum.

  python3 validation/harness/compute_jitter.py [--iters 400] [--out jitter.csv]
Exit status 77 when PyTorch or a GPU is missing.
"""
import argparse
import statistics
import sys

from probe_common import SKIPPED, torch_on_gpu, write_result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--out", default="-")
    args = ap.parse_args()
    torch = torch_on_gpu("compute_jitter")
    if torch is None:
        return SKIPPED
    dev = torch.device("cuda", 0)
    x = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w1 = (torch.randn(4096, 14336, device=dev, dtype=torch.bfloat16) * 0.01).requires_grad_()
    w2 = (torch.randn(14336, 4096, device=dev, dtype=torch.bfloat16) * 0.01).requires_grad_()
    flops = 3 * 2 * 2 * 8192 * 4096 * 14336  # two GEMMs, forward + two backward GEMMs each

    def step():
        y = torch.nn.functional.silu(x @ w1) @ w2
        torch.autograd.grad(y, (x, w1, w2), torch.ones_like(y))

    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(args.iters)]
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    for s, e in events:
        s.record()
        step()
        e.record()
    torch.cuda.synchronize()
    ms = [s.elapsed_time(e) for s, e in events]
    mean, sd = statistics.fmean(ms), statistics.stdev(ms)
    q = sorted(ms)
    text = "iteration,time_ms\n" + "".join(f"{i},{t:.5f}\n" for i, t in enumerate(ms))
    write_result(args.out, text)
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}: {args.iters} iterations, mean {mean:.4f} ms "
          f"({flops / mean / 1e9:.0f} TFLOP/s), sd {sd:.4f} ms, cv {sd / mean:.5f}, median {q[len(q) // 2]:.4f}, "
          f"p99 {q[int(0.99 * (len(q) - 1))]:.4f}, max {q[-1]:.4f} ms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
