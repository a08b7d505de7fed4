#!/usr/bin/env python3
"""PyTorch's side of `urpe bench attention`: the same shapes and rows, timed the same way.

Why: urpe's fused URPE attention has no PyTorch equivalent (the C multiply after the softmax is
not in any fused kernel), so it is compared against the things a PyTorch user has:
  materialized  softmax(QKᵀ·s + B) ⊙ C then ·V in eager ops (what the reference model does),
  sdpa+bias     torch.nn.functional.scaled_dot_product_attention with B as a float mask (no C:
                plain RPE attention, PyTorch's fused path for it), and
  sdpa          scaled_dot_product_attention with no mask at all: PyTorch's flash kernel (on the
                CPU since 2.2), the fastest attention PyTorch has, without any positional term.
Rows match urpe's: forward under no_grad, and forward + backward into Q, K, V, B (and C).
Time: wall clock around the call with a device synchronisation, median of --repeats after one
warm-up; peak MiB: torch.cuda.max_memory_allocated above what was allocated before the call.

  python3 bench/torch_attention.py --device cuda --batch 32 --lengths 512,1024,2048
  /work/venv-torch2/bin/python bench/torch_attention.py --device cpu --batch 4 --paths sdpa,sdpa+bias
"""
import argparse
import math
import os
import time

import torch


def toeplitz_index(n, device):
    """(n, n) index into a (2n−1)-entry table: j − i + n − 1, urpe's toeplitz_map."""
    i = torch.arange(n, device=device)
    return i[None, :] - i[:, None] + n - 1


def measure(dev, repeats, reset, fn):
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    reset()
    fn()
    sync()
    times, peak = [], 0.0
    for _ in range(repeats):
        reset()
        sync()
        before = torch.cuda.memory_allocated(dev) if dev.type == "cuda" else 0
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1000)
        if dev.type == "cuda":
            peak = max(peak, torch.cuda.max_memory_allocated(dev) - before)
    times.sort()
    return times[len(times) // 2], peak / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=32)
    ap.add_argument("--lengths", default="1024,4096")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--paths", default="materialized,sdpa+bias,sdpa", help="comma-separated rows to time")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # urpe's default: full FP32 GEMMs
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    print(f"PyTorch {torch.__version__} attention — device {args.device} ({name}), batch {args.batch}, "
          f"{args.heads} heads, head dim {args.head_dim}, fp32, TF32 off; median of {args.repeats} runs after one warm-up")
    print(f"{'n':<7} {'path':<13} {'direction':<17} {'median ms':>10} {'peak MiB':>10}")
    print("-" * 61)
    for n in [int(x) for x in args.lengths.split(",")]:
        g = torch.Generator().manual_seed(n)
        shape = (args.batch, args.heads, n, args.head_dim)
        q, k, v = (torch.rand(shape, generator=g).mul_(2).sub_(1).to(dev) for _ in range(3))
        bias_table = torch.rand(args.heads, 2 * n - 1, generator=g).mul_(2).sub_(1).to(dev)
        c_table = torch.rand(args.heads, 2 * n - 1, generator=g).add_(0.5).to(dev)
        grad = torch.rand(shape, generator=g).mul_(2).sub_(1).to(dev)
        index = toeplitz_index(n, dev)
        scale = 1.0 / math.sqrt(args.head_dim)
        leaves = (q, k, v, bias_table, c_table)

        def materialized():
            s = (q @ k.transpose(-1, -2)) * scale + bias_table[:, index]
            return (torch.softmax(s, dim=-1) * c_table[:, index]) @ v

        def sdpa_bias():
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias_table[:, index], scale=scale)

        def sdpa():
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)

        paths = {"materialized": materialized, "sdpa+bias": sdpa_bias, "sdpa": sdpa}
        for path in args.paths.split(","):
            if path not in paths:
                ap.error(f"--paths: unknown path {path}; expected some of {', '.join(paths)}")
            forward = paths[path]
            for direction in ("forward", "forward+backward"):
                backward = direction != "forward"
                for t in leaves:
                    t.requires_grad_(backward)

                def reset():
                    for t in leaves:
                        t.grad = None

                def call():
                    if backward:
                        forward().backward(grad)
                    else:
                        with torch.no_grad():
                            forward()

                try:
                    ms, mib = measure(dev, args.repeats, reset, call)
                    print(f"{n:<7} {path:<13} {direction:<17} {ms:>10.2f} {mib:>10.3f}", flush=True)
                except (torch.cuda.OutOfMemoryError, MemoryError, RuntimeError) as error:
                    if not isinstance(error, torch.cuda.OutOfMemoryError) and "memory" not in str(error).lower():
                        raise
                    print(f"{n:<7} {path:<13} {direction:<17} {'out of memory':>21}", flush=True)
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
