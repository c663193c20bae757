"""What the PyTorch probes of the harness share: finding PyTorch and a GPU (exit status 77 without
them, as the CUDA programs of the harness), a one-rank process group, and writing a result file
whole (a `.part` file renamed over it, so an interrupted run leaves no half-written CSV)."""
import os
import sys

SKIPPED = 77


def torch_on_gpu(probe):
    """PyTorch, or None (with the reason on stderr) when it or a GPU is missing."""
    try:
        import torch
    except ImportError:
        print(f"{probe}: PyTorch is not installed: nothing measured", file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print(f"{probe}: no GPU: nothing measured", file=sys.stderr)
        return None
    torch.cuda.set_device(0)
    return torch


def one_rank_process_group(torch, port):
    """torch.distributed with NCCL and world size 1 (what FSDP needs on one GPU)."""
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    return dist


def write_result(path, text):
    """Writes text to path ('-' = stdout) in one piece."""
    if path == "-":
        sys.stdout.write(text)
        return
    with open(path + ".part", "w") as f:
        f.write(text)
    os.replace(path + ".part", path)
