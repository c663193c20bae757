#!/usr/bin/env python3
"""Fused attention on this GPU, in the columns `micsim calibrate --kernels` reads (validation/data/attention).

PyTorch's scaled_dot_product_attention with one backend at a time (flash: FlashAttention-2 class,
impl sdpa-flash2; cuDNN: impl cudnn), bf16, head size 128, 32 heads, a fixed number of tokens per call
(batch x sequence = --tokens) over sequence lengths 512 ... 16384, causal and full masks, forward and
backward timed apart with CUDA events (median of --iters after 3 warm-ups). FLOPs are the FlashAttention
convention the data directory uses: forward 4·B·H·S²·D (half when causal), backward 2.5 x forward.

  python3 validation/harness/attention_sweep.py --gpu H200-SXM-141GB [--out attention.csv]
Exit status 77 when PyTorch or a GPU is missing.
"""
import argparse
import statistics
import sys

from probe_common import SKIPPED, torch_on_gpu, write_result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True, help="micsim catalog GPU name of the device (e.g. H200-SXM-141GB)")
    ap.add_argument("--out", default="-")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--source", default="micsim validation/harness/attention_sweep.py")
    args = ap.parse_args()
    torch = torch_on_gpu("attention_sweep")
    if torch is None:
        return SKIPPED
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dev = torch.device("cuda", 0)
    heads, dim = 32, 128
    note = f"torch {torch.__version__}; {torch.cuda.get_device_name(0)}; cudnn {torch.backends.cudnn.version()}"

    def timed(fn):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        out = []
        for i in range(args.iters + 3):
            start.record()
            fn()
            end.record()
            end.synchronize()
            if i >= 3:
                out.append(start.elapsed_time(end))
        return statistics.median(out)

    rows = []
    for impl, backend in (("sdpa-flash2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        for causal in (True, False):
            for seq in (512, 1024, 2048, 4096, 8192, 16384):
                batch = max(1, args.tokens // seq)
                q, k, v = (torch.randn(batch, heads, seq, dim, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
                try:
                    with sdpa_kernel(backend):
                        fwd_ms = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        grad = torch.randn_like(out)

                        def backward():
                            torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)
                        bwd_ms = timed(backward)
                except RuntimeError as e:
                    print(f"attention_sweep: {impl} causal={causal} seq={seq}: {e}".splitlines()[0], file=sys.stderr)
                    continue
                fwd_flops = 4.0 * batch * heads * seq * seq * dim * (0.5 if causal else 1.0)
                for name, ms, flops in (("fwd", fwd_ms, fwd_flops), ("bwd", bwd_ms, 2.5 * fwd_flops)):
                    rows.append(f'"{args.source}",{args.gpu},{impl},bf16,{batch},{seq},{heads},{dim},{causal},{name},'
                                f'{flops / ms / 1e9:.1f},{ms:.4f},"{note}; median of {args.iters} after 3 warm-ups"')
                del q, k, v
    text = "source,gpu,impl,dtype,batch,seq_len,heads,head_dim,causal,pass,tflops,time_ms,notes\n" + "\n".join(rows) + "\n"
    write_result(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
