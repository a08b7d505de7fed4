#!/usr/bin/env python3
"""PyTorch's side of `urpe bench peaks --device cuda`'s GEMMs by dtype: the same products, timed the same way.

Why (issue 36): under precision=bf16 urpe's linear GEMM (cuBLAS, BF16 in, FP32 out, β = 1 onto the
bias) ran at 94 TFLOP/s on an H200 where TF32 ran at 157. Beside urpe's rows, these say what
PyTorch's cuBLAS calls reach on the same card at the same shapes, so a slow row points at the call
(output dtype, β, the cuBLASLt bias epilogue) and not at the card.

Every row computes C = A·Bᵀ (+ C), laid out as a linear layer's forward x·Wᵀ: A (m, k), B (n, k),
both row-major, as urpe's rows:
  fp32          torch.matmul in FP32, TF32 off (allow_tf32 = False)
  tf32          the same with allow_tf32 = True
  bf16          torch.matmul on bf16 copies: BF16 out (what autocast's GEMMs return)
  bf16→f32      torch.mm(..., out_dtype=torch.float32) on bf16 copies (PyTorch ≥ 2.8; urpe's
                linear GEMM), where this PyTorch has it
and each again with β = 1 (torch.addmm onto a full C of the output's dtype), plus, for bf16,
`linear+bias`: F.linear with a bf16 bias vector (cuBLASLt's bias epilogue, autocast's linear).
Time: CUDA events around each call, twice the L2 rewritten before it (outside the timed region),
median of --repeats after --warmup calls; TFLOP/s = 2·m·n·k / time.

  python3 bench/torch_gemm.py --device cuda
  python3 bench/torch_gemm.py --dry-run --shapes 64x64x64      (lists the rows, no PyTorch needed)
"""
import argparse

torch = None  # imported in main, after the arguments (so --dry-run works without PyTorch)

DEFAULT_SHAPES = [("square 8192", 8192, 8192, 8192),
                  ("linear 16384×768×768 (projection)", 16384, 768, 768),
                  ("linear 16384×3072×768 (FFN in)", 16384, 3072, 768),
                  ("linear 16384×768×3072 (FFN out)", 16384, 768, 3072)]
MATHS = ("fp32", "tf32", "bf16", "bf16→f32")


def parse_shapes(text):
    if not text:
        return DEFAULT_SHAPES
    shapes = []
    for item in text.split(","):
        m, n, k = (int(x) for x in item.split("x"))
        shapes.append((f"{m}×{n}×{k}", m, n, k))
    return shapes


def time_events(dev, fn, repeats, warmup):
    """Median ms of fn over CUDA events, each run after the L2 is rewritten (urpe's time_cuda)."""
    flush = torch.empty(2 * torch.cuda.get_device_properties(dev).L2_cache_size, dtype=torch.uint8, device=dev)
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize(dev)
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(repeats):
        flush.fill_(i & 0xFF)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    mid = len(times) // 2
    return times[mid] if len(times) % 2 else 0.5 * (times[mid - 1] + times[mid])


def rows_of(math):
    """(label, beta) rows of one math: β = 0, β = 1 and, for bf16, F.linear with a bias."""
    rows = [("matmul", 0), ("addmm", 1)]
    if math == "bf16":
        rows.append(("linear+bias", 1))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--shapes", default="", help="comma-separated MxNxK (default: 8192³ and the Table 5 "
                    "encoder's linear shapes)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--dry-run", action="store_true", help="list the rows without PyTorch")
    args = ap.parse_args()
    if args.repeats < 1 or args.warmup < 0:
        ap.error("--repeats must be at least 1 and --warmup at least 0")
    shapes = parse_shapes(args.shapes)
    if args.dry_run:
        for name, m, n, k in shapes:
            for math in MATHS:
                for call, beta in rows_of(math):
                    print(f"would run: {name} ({m}×{n}×{k}), {math}, {call}, β = {beta}")
        return
    global torch
    import torch as torch_module
    torch = torch_module
    dev = torch.device(args.device)
    if dev.type != "cuda":
        ap.error("--device: the GEMM rows time CUDA events; use a CUDA device")
    F = torch.nn.functional
    print(f"PyTorch {torch.__version__} GEMMs by dtype — {torch.cuda.get_device_name(dev)}, "
          f"CUDA {torch.version.cuda}, cuBLAS via torch; median of {args.repeats} after {args.warmup} warm-up")
    print("| shape | m×n×k | math | call | β | ms | TFLOP/s |\n|---|---|---|---|---|---|---|")
    for name, m, n, k in shapes:
        g = torch.Generator().manual_seed(m * 31 + n * 7 + k)
        a = torch.rand(m, k, generator=g).mul_(2).sub_(1).to(dev)
        b = torch.rand(n, k, generator=g).mul_(2).sub_(1).to(dev)
        c = torch.rand(m, n, generator=g).mul_(2).sub_(1).to(dev)
        bias = torch.rand(n, generator=g).mul_(2).sub_(1).to(dev)
        a16, b16, c16, bias16 = (t.to(torch.bfloat16) for t in (a, b, c, bias))
        for math in MATHS:
            torch.backends.cuda.matmul.allow_tf32 = math == "tf32"
            for call, beta in rows_of(math):
                if math in ("fp32", "tf32"):
                    fns = {"matmul": lambda: torch.matmul(a, b.t()), "addmm": lambda: torch.addmm(c, a, b.t())}
                elif math == "bf16":
                    fns = {"matmul": lambda: torch.matmul(a16, b16.t()), "addmm": lambda: torch.addmm(c16, a16, b16.t()),
                           "linear+bias": lambda: F.linear(a16, b16, bias16)}
                else:  # BF16 in, FP32 out: only where torch.mm / addmm take out_dtype
                    fns = {"matmul": lambda: torch.mm(a16, b16.t(), out_dtype=torch.float32),
                           "addmm": lambda: torch.addmm(c, a16, b16.t(), out_dtype=torch.float32)}
                label = f"| {name} | {m}×{n}×{k} | {math} | {call} | {beta} |"
                try:
                    with torch.no_grad():
                        ms = time_events(dev, fns[call], args.repeats, args.warmup)
                    print(f"{label} {ms:.4g} | {2.0 * m * n * k / (ms * 1e-3) / 1e12:.4g} |", flush=True)
                except Exception as error:  # an older PyTorch without out_dtype, out of memory
                    reason = f"{type(error).__name__}: {str(error).splitlines()[0][:100] if str(error) else ''}"
                    print(f"{label} not run: {reason} |", flush=True)
                    torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
