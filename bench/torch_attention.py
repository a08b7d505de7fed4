#!/usr/bin/env python3
"""PyTorch's side of `urpe bench attention`: the same shapes and rows, timed the same way.

Why: urpe's fused URPE attention has no PyTorch equivalent (the C multiply after the softmax is
not in any fused kernel), so it is compared against the things a PyTorch user has:
  materialized  softmax(QKᵀ·s + B) ⊙ C then ·V in eager ops (URPE exactly, what the reference
                model does),
  sdpa+bias     torch.nn.functional.scaled_dot_product_attention with B as a float mask (no C:
                plain RPE attention, PyTorch's fused path for it),
  flex          FlexAttention (torch.compile'd) with a score_mod adding B[h, j − i] (no C: the
                closest a compiled fused kernel gets to URPE), where it runs,
  sdpa          scaled_dot_product_attention with no mask at all, in the inputs' float32 (the
                memory-efficient kernel on a GPU), the fastest float32 attention PyTorch has,
                without any positional term, and
  sdpa_bf16     the same on bfloat16 copies with the flash backend forced: FlashAttention-2 itself,
                the speed the tensor-core target is read against (not the same precision).
Rows match urpe's: forward under no_grad, and forward + backward into Q, K, V, B (and C).
Time: wall clock around the call with a device synchronisation, median of --repeats after one
warm-up; peak MiB: torch.cuda.max_memory_allocated above what was allocated before the call.
GFLOP: FlashAttention's count, forward 4·B·H·n²·d (halved when --causal), backward 2.5× forward.
A row that cannot run (out of memory, a backend that refuses the shape) prints why and the rest
go on.

  python3 bench/torch_attention.py --device cuda --batch 32 --lengths 512,1024,2048
  python3 bench/torch_attention.py --device cuda --batch 8 --heads 16 --head-dim 64 --lengths 4096 --tf32 --causal
  /work/venv-torch2/bin/python bench/torch_attention.py --device cpu --batch 4 --paths sdpa,sdpa+bias
"""
import argparse
import math
import os
import time

torch = None  # imported in main, after the arguments (so --dry-run works without PyTorch)


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
    ap.add_argument("--causal", action="store_true", help="causal mask on every path")
    ap.add_argument("--tf32", action="store_true", help="TF32 matmuls (torch.backends.cuda.matmul.allow_tf32)")
    ap.add_argument("--paths", default="materialized,sdpa+bias,sdpa", help="comma-separated rows to time: "
                    "materialized, sdpa+bias, flex, sdpa, sdpa_bf16")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads")
    ap.add_argument("--dry-run", action="store_true", help="check the arguments and list the rows, without PyTorch")
    args = ap.parse_args()
    wanted = args.paths.split(",")
    known = ("materialized", "sdpa+bias", "flex", "sdpa", "sdpa_bf16")
    for path in wanted:
        if path not in known:
            ap.error(f"--paths: unknown path {path}; expected some of {', '.join(known)}")
    lengths = [int(x) for x in args.lengths.split(",")]
    if args.dry_run:
        for n in lengths:
            for path in wanted:
                print(f"would run: n {n}, {path}, forward and forward+backward, batch {args.batch}, "
                      f"{args.heads} heads, head dim {args.head_dim}, causal {args.causal}, tf32 {args.tf32}")
        return
    global torch
    import torch as torch_module
    torch = torch_module
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32  # urpe's default is off: full FP32 GEMMs
    torch.backends.cudnn.allow_tf32 = args.tf32
    math_name = "tf32" if args.tf32 else "fp32"
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    print(f"PyTorch {torch.__version__} attention — device {args.device} ({name}), batch {args.batch}, "
          f"{args.heads} heads, head dim {args.head_dim}, {'causal' if args.causal else 'not causal'}, "
          f"math {math_name} (sdpa_bf16: bf16); median of {args.repeats} runs after one warm-up")
    print(f"{'n':<7} {'path':<13} {'direction':<17} {'median ms':>10} {'peak MiB':>10} {'math':>5} "
          f"{'GFLOP':>11} {'TFLOP/s':>9}")
    print("-" * 88)
    flex_attention = create_block_mask = None
    if "flex" in wanted:
        try:
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            flex_attention = torch.compile(flex_attention)
        except Exception as error:  # an older PyTorch: the row says so
            print(f"flex: not available ({type(error).__name__}: {error})")
    for n in lengths:
        g = torch.Generator().manual_seed(n)
        shape = (args.batch, args.heads, n, args.head_dim)
        q, k, v = (torch.rand(shape, generator=g).mul_(2).sub_(1).to(dev) for _ in range(3))
        bias_table = torch.rand(args.heads, 2 * n - 1, generator=g).mul_(2).sub_(1).to(dev)
        c_table = torch.rand(args.heads, 2 * n - 1, generator=g).add_(0.5).to(dev)
        grad = torch.rand(shape, generator=g).mul_(2).sub_(1).to(dev)
        scale = 1.0 / math.sqrt(args.head_dim)
        leaves = (q, k, v, bias_table, c_table)
        forward_flops = 4.0 * args.batch * args.heads * n * n * args.head_dim / (2.0 if args.causal else 1.0)
        index = future = None
        if n <= 8192:  # the n × n index and mask of the materialised paths
            index = toeplitz_index(n, dev)
            future = torch.ones(n, n, dtype=torch.bool, device=dev).triu_(1) if args.causal else None

        def bias_mask():
            b = bias_table[:, index]
            return b.masked_fill(future, float("-inf")) if future is not None else b

        def materialized():
            s = (q @ k.transpose(-1, -2)) * scale + bias_mask()
            return (torch.softmax(s, dim=-1) * c_table[:, index]) @ v

        def sdpa_bias():
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias_mask(), scale=scale)

        def sdpa():
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=args.causal)

        low = {}

        def sdpa_bf16():
            from torch.nn.attention import SDPBackend, sdpa_kernel
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                return torch.nn.functional.scaled_dot_product_attention(low["q"], low["k"], low["v"], scale=scale,
                                                                        is_causal=args.causal)

        block_mask = None
        if flex_attention is not None and args.causal and "flex" in wanted:
            block_mask = create_block_mask(lambda b, h, qi, kv: qi >= kv, B=None, H=None, Q_LEN=n, KV_LEN=n,
                                           device=args.device)

        def rpe_score(score, b, h, q_idx, kv_idx):
            return score + bias_table[h, kv_idx - q_idx + n - 1]

        def flex():
            return flex_attention(q, k, v, score_mod=rpe_score, block_mask=block_mask, scale=scale)

        paths = {"materialized": materialized, "sdpa+bias": sdpa_bias, "flex": flex, "sdpa": sdpa,
                 "sdpa_bf16": sdpa_bf16}
        for path in wanted:
            forward = paths[path]
            row_math = "bf16" if path == "sdpa_bf16" else math_name
            for direction in ("forward", "forward+backward"):
                backward = direction != "forward"
                label = f"{n:<7} {path:<13} {direction:<17}"
                if path in ("materialized", "sdpa+bias") and index is None:
                    print(f"{label} not run: n > 8192 needs n² memory", flush=True)
                    continue
                if path == "flex" and flex_attention is None:
                    print(f"{label} not run: FlexAttention not available", flush=True)
                    continue
                for t in leaves:
                    t.requires_grad_(backward)
                if path == "sdpa_bf16":
                    low.update({name: t.detach().to(torch.bfloat16).requires_grad_(backward)
                                for name, t in (("q", q), ("k", k), ("v", v))})
                grads_of = list(low.values()) if path == "sdpa_bf16" else list(leaves)
                upstream = grad.to(torch.bfloat16) if path == "sdpa_bf16" else grad

                def reset():
                    for t in grads_of:
                        t.grad = None

                def call():
                    if backward:
                        forward().backward(upstream)
                    else:
                        with torch.no_grad():
                            forward()

                try:
                    ms, mib = measure(dev, args.repeats, reset, call)
                    flops = forward_flops * (3.5 if backward else 1.0)
                    print(f"{label} {ms:>10.2f} {mib:>10.3f} {row_math:>5} {flops / 1e9:>11.1f} "
                          f"{flops / 1e9 / ms:>9.2f}", flush=True)
                except Exception as error:  # out of memory, or a backend that refuses this shape
                    reason = f"{type(error).__name__}: {str(error).splitlines()[0][:100] if str(error) else ''}"
                    print(f"{label} not run: {reason}", flush=True)
                    if dev.type == "cuda":
                        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
