#!/usr/bin/env python3
"""PyTorch's side of `urpe bench step --model encoder|txl|graphormer`: the same training steps.

Why: urpe's CPU speed is only meaningful beside what a user would run instead. This script runs
each family's bench step (app/bench/step_models.h: the same sizes, initialisation scale, data, loss and
Adam at lr 1e-4) with the golden-fixture twins of the models (tools/torch_reference*.py), in
PyTorch eager or under torch.compile, and prints the numbers `urpe bench step` prints: the median
step, the CPU time of a step, the resident-set growth over the first step, and which GEMM kernels
ran. bench/cpu_vs_torch.py alternates it with urpe round by round.

  /usr/bin/python3 tools/torch_bench.py --model encoder                 # Debian's PyTorch 1.13, eager
  /work/venv-torch2/bin/python tools/torch_bench.py --model txl --compile  # PyTorch 2 (PyPI), inductor
  ... --seq-len 1024 --batch 4                                           # the long-sequence encoder step
  ... --flops                                                            # PyTorch's own FLOP count of a step
  ... --device cuda --layers 12 --d-model 768 --heads 12 --d-ff 3072 --seq-len 512 --precision bf16
                                                                         # Table 5's encoder under torch.autocast(bfloat16)
  python3 tools/torch_bench.py --model graphormer --device cuda          # on a GPU (bench/gpu_session.sh families)

--precision fp32|tf32|bf16 (tf32 on a GPU only) is urpe's precision switch on PyTorch's side: fp32 with TF32
off, fp32 with TF32 matmuls on, or the forward and loss under torch.autocast(dtype=torch.bfloat16)
with FP32 parameters and Adam (TF32 on for what autocast leaves in FP32, as urpe's bf16 does).

On a GPU the model, its data and Adam live on the device (the data of a step is drawn on the CPU with
the same generator, then copied, outside the timed region), each timed step ends with a device
synchronisation as urpe's does, and the memory line is the caching allocator's peak. The twins'
own tensor factories follow torch.set_default_device.

PyTorch 2 for benchmarks only (the tests never need PyTorch): a venv outside the repository,
    python3 -m venv /work/venv-torch2 && /work/venv-torch2/bin/pip install -r tools/requirements-bench.txt
Works with PyTorch 1.13 (no torch.compile there: --compile is refused) and 2.x.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402  (sets the BLAS and OpenMP environment before torch)
import torch  # noqa: E402
import torch_reference_graphormer as ref_graphormer  # noqa: E402
import torch_reference_txl as ref_txl  # noqa: E402

LEARNING_RATE = 1e-4

# ---- the three bench configurations (train/families/NAME/NAME_bench_step.cpp) ----

ENCODER = dict(ref.BENCH)  # n 128, d 128, 4 heads, 2 layers, d_ff 512, batch 32, URPE
TXL = {"vocab": 1000, "layers": 2, "d_model": 128, "heads": 4, "d_head": 32, "d_inner": 512,
       "tgt_len": 128, "mem_len": 128, "clamp_len": -1, "max_klen": 256, "batch": 16, "urpe": True,
       "cutoffs": [], "same_length": False, "alibi": False}
GRAPHORMER = {"layers": 2, "d_model": 128, "d_ffn": 512, "heads": 8, "multi_hop_max_dist": 5,
              "num_atoms": 64, "num_edges": 64, "num_spatial": 40, "num_degree": 64, "num_edge_dis": 40,
              "urpe": True, "max_spd": 38, "batch": 128}


def init_parameters(shapes, g):
    """urpe's scale of initialisation (the values do not change the work): LayerNorm gains and
    URPE's C at 1, biases 0, the rest N(0, 0.02²), drawn from generator g in the order of shapes."""
    params = {}
    for name, shape in shapes.items():
        if name == "urpe_c" or (("norm" in name or name.startswith("final_ln")) and name.endswith(".weight")):
            w = torch.ones(shape)
        elif name.endswith(".bias") or name in ("out_bias", "cluster_bias"):
            w = torch.zeros(shape)
        else:
            w = 0.02 * torch.randn(shape, generator=g)
        params[name] = w.requires_grad_(True)
    return params


def bench_molecules(count):
    """The molecules of urpe's bench (train/families/graphormer/graphormer_bench_step.cpp: bench_molecules), as
    torch_reference_graphormer.collate takes them: (SMILES, atom types, bonds, target)."""
    molecules = []
    for g in range(count):
        n = 20 + (7 * g) % 19
        types = [(g + 3 * i) % 9 for i in range(n)]
        bonds = [(i, i + 1, 1 + (g + i) % 3) for i in range(n - 1)]
        bonds += [(i, i + 5, 1) for i in range(0, n - 5, 6)]
        molecules.append(("", types, bonds, ((g % 10) - 4.5) / 3))
    return molecules


# ---- one family each: parameters, the data of a step, and the loss of a step ----

class EncoderStep:
    def __init__(self, seq_len, batch, sizes=None):
        self.cfg = dict(ENCODER, seq_len=seq_len or ENCODER["seq_len"], batch=batch or ENCODER["batch"])
        self.cfg.update({k: v for k, v in (sizes or {}).items() if v})  # --layers, --d-model, --heads, --d-ff
        self.cfg["num_classes"] = self.cfg["seq_len"]
        self.g = torch.Generator().manual_seed(0)
        self.params = ref.bench_parameters(self.cfg, self.g)
        for p in self.params.values():
            p.requires_grad_(True)
        c = self.cfg
        self.description = (f"encoder: n={c['seq_len']} d={c['d_model']} heads={c['heads']} layers={c['layers']} "
                            f"d_ff={c['d_ff']} batch={c['batch']} pe=urpe attention=materialized")

    def next_batch(self):
        B, N = self.cfg["batch"], self.cfg["seq_len"]
        return (torch.randint(0, self.cfg["vocab"], (B, N), generator=self.g, device="cpu"),
                torch.arange(N, device="cpu").repeat(B, 1))

    def loss(self, params, batch):
        tokens, targets = batch
        B, N = tokens.shape
        logits = ref.encoder_forward(self.cfg, params, tokens)
        return torch.nn.functional.cross_entropy(logits.reshape(B * N, -1), targets.reshape(-1))


class TxlStep:
    def __init__(self, seq_len, batch):
        self.cfg = dict(TXL, batch=batch or TXL["batch"])
        if seq_len:
            self.cfg.update(tgt_len=seq_len, mem_len=seq_len, max_klen=2 * seq_len)
        self.g = torch.Generator().manual_seed(0)
        self.params = init_parameters(ref_txl.parameter_shapes(self.cfg), self.g)
        c = self.cfg
        # the memory of a long-running model: mem_len rows of zeros, so every step has klen = 2·tgt_len
        self.mems = [torch.zeros(c["mem_len"], c["batch"], c["d_model"]) for _ in range(c["layers"] + 1)]
        self.description = (f"txl: vocab={c['vocab']} layers={c['layers']} d={c['d_model']} heads={c['heads']} "
                            f"d_head={c['d_head']} d_inner={c['d_inner']} tgt_len={c['tgt_len']} "
                            f"mem_len={c['mem_len']} batch={c['batch']} urpe, full softmax")

    def next_batch(self):
        shape = (self.cfg["tgt_len"], self.cfg["batch"])
        return (torch.randint(0, self.cfg["vocab"], shape, generator=self.g, device="cpu"),
                torch.randint(0, self.cfg["vocab"], shape, generator=self.g, device="cpu"), self.mems)

    def to(self, dev):
        self.mems = [m.to(dev) for m in self.mems]

    def loss(self, params, batch):
        tokens, targets, mems = batch
        hidden, new_mems = ref_txl.txl_forward(self.cfg, params, tokens, mems)
        return ref_txl.full_softmax(self.cfg, params, hidden, targets)[1], new_mems

    def after_step(self, extra):
        self.mems = extra


class GraphormerStep:
    def __init__(self, seq_len, batch):
        if seq_len:
            sys.exit("torch_bench.py: --seq-len: graphormer's molecules set their own sizes; use --batch")
        self.cfg = dict(GRAPHORMER, batch=batch or GRAPHORMER["batch"])
        self.g = torch.Generator().manual_seed(0)
        self.params = init_parameters(ref_graphormer.parameter_shapes(self.cfg), self.g)
        saved = ref_graphormer.COLLATE_HOPS
        ref_graphormer.COLLATE_HOPS = self.cfg["multi_hop_max_dist"]
        self.inputs = ref_graphormer.collate(bench_molecules(self.cfg["batch"]))
        ref_graphormer.COLLATE_HOPS = saved
        c, n = self.cfg, self.inputs["x"].shape[1]
        self.description = (f"graphormer: layers={c['layers']} d={c['d_model']} d_ffn={c['d_ffn']} "
                            f"heads={c['heads']} multi_hop={c['multi_hop_max_dist']} batch={c['batch']} "
                            f"graphs of 20-38 atoms (n+1={n + 1}) urpe")

    def next_batch(self):
        return self.inputs

    def to(self, dev):
        self.inputs = to_device(self.inputs, dev)

    def loss(self, params, inputs):
        pred = ref_graphormer.forward(self.cfg, params, inputs)
        return (pred - inputs["y"]).abs().mean()


def to_device(x, dev):
    """x with every tensor in it (through tuples, lists and dicts) on dev."""
    if isinstance(x, torch.Tensor):
        return x.to(dev)
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, dev) for v in x)
    if isinstance(x, dict):
        return {k: to_device(v, dev) for k, v in x.items()}
    return x


FAMILIES = {"encoder": EncoderStep, "txl": TxlStep, "graphormer": GraphormerStep}


# ---- what ran ----

def gemm_kernels():
    """Which sgemm this PyTorch calls: OpenBLAS and its kernel family (Debian's torch), or MKL
    (PyPI's x86 wheels link it statically) with whether MKL took this CPU for an Intel one (it
    picks its AVX-512 paths only on Intel CPUs)."""
    core = ref.openblas_core()
    if core:
        return f"OpenBLAS {core} kernels ({ref.blas_in_use()})"
    config = torch.__config__.show()
    mkl = next((l.strip(" -") for l in config.splitlines() if "Math Kernel Library" in l), None)
    if mkl:
        text = "MKL " + mkl.split("Version")[-1].split("-")[0].strip()
        try:
            import ctypes
            lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
            intel = lib.mkl_serv_intel_cpu_true()
            text += f", mkl_serv_intel_cpu_true() = {intel}" + ("" if intel else " (not an Intel CPU: no AVX-512 paths)")
        except (OSError, AttributeError):
            pass
        return text
    return f"BLAS: {ref.blas_in_use()}"


def cpu_capability():
    """The vector ISA ATen's own kernels were dispatched to (PyTorch ≥ 2.1), else what
    torch.__config__ reports."""
    backend = getattr(torch.backends, "cpu", None)
    if backend is not None and hasattr(backend, "get_cpu_capability"):
        return backend.get_cpu_capability()
    line = next((l for l in torch.__config__.show().splitlines() if "CPU capability" in l), "")
    return line.split(":")[-1].strip() or "unknown"


def sgemm_rate(n=1024, seconds=1.0):
    """This PyTorch's own sgemm rate on an n² product (best of a few timed batches), GFLOP/s of
    wall time and per CPU-second·threads (the latter barely moves with the machine's load)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    best_wall = best_cpu = 0.0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t, c = time.perf_counter(), time.process_time()
        for _ in range(4):
            a @ b
        wall, cpu = (time.perf_counter() - t) / 4, (time.process_time() - c) / 4 / torch.get_num_threads()
        best_wall = max(best_wall, 2 * n ** 3 / wall / 1e9)
        best_cpu = max(best_cpu, 2 * n ** 3 / max(cpu, 1e-9) / 1e9)
    return best_wall, best_cpu


def count_flops(family, params):
    """PyTorch's own count of a step's FLOPs (torch.utils.flop_counter, PyTorch ≥ 2.1: matmul-like
    ops, forward and backward), or None."""
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        return None
    with FlopCounterMode(display=False) as counter:
        out = family.loss(params, to_device(family.next_batch(), next(iter(params.values())).device))
        (out[0] if isinstance(out, tuple) else out).backward()
    for p in params.values():
        p.grad = None
    return counter.get_total_flops()


# ---- the timed loop ----

def run(args):
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    if args.model == "encoder":  # built on the CPU: its generator draws there
        family = EncoderStep(args.seq_len, args.batch, {"layers": args.layers, "d_model": args.d_model,
                                                        "heads": args.heads, "d_ff": args.d_ff})
    else:
        family = FAMILIES[args.model](args.seq_len, args.batch)
    if cuda:
        tf32 = args.precision in ("tf32", "bf16")
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    if cuda:
        family.params = {k: v.detach().to(dev).requires_grad_(True) for k, v in family.params.items()}
        if hasattr(family, "to"):
            family.to(dev)
        torch.set_default_device(dev)  # the twins' own torch.zeros/arange/... inside the forward
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    params = family.params
    optimizer = torch.optim.Adam(params.values(), lr=LEARNING_RATE)
    compiled = args.compile
    loss_fn = torch.compile(family.loss) if compiled else family.loss
    mode = "torch.compile (inductor)" if compiled else "eager"
    if args.precision == "bf16":
        inner, mode = loss_fn, mode + ", torch.autocast(bfloat16)"

        def loss_fn(p, b):
            with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
                return inner(p, b)

    times, cpu_times = [], []
    rss_before = ref.rss_mib("VmRSS")
    peak_window = ref.peak_rss_reset()
    first_step_growth, first_step_s = None, None
    for step in range(args.warmup + args.steps):
        if step == 1 and peak_window and rss_before is not None:
            first_step_growth = ref.rss_mib("VmHWM") - rss_before
        batch = to_device(family.next_batch(), dev)
        sync()
        if step == args.warmup and cuda:
            torch.cuda.reset_peak_memory_stats(dev)
        t0, c0 = time.perf_counter(), time.process_time()
        optimizer.zero_grad()
        out = loss_fn(params, batch)
        loss = out[0] if isinstance(out, tuple) else out
        loss.backward()
        optimizer.step()
        sync()
        wall, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
        if isinstance(out, tuple):
            family.after_step(out[1])
        if step == 0:
            first_step_s = wall / 1000
        if step >= args.warmup:
            times.append(wall)
            cpu_times.append(cpu)

    flops = count_flops(family, params) if args.flops else None  # after the timed steps: not in their RSS
    if cuda:
        print(f"PyTorch {torch.__version__} {mode}, device {dev} ({torch.cuda.get_device_name(dev)}), "
              f"TF32 matmul {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}")
    else:
        print(f"PyTorch {torch.__version__} {mode}, {torch.get_num_threads()} threads, GEMM: {gemm_kernels()}, "
              f"ATen CPU capability {cpu_capability()}")
    print(f"bench config: {family.description}; {args.steps} timed steps after {args.warmup} warm-up")
    print(f"median {statistics.median(times):.2f} ms per step (min {min(times):.2f}, max {max(times):.2f})")
    print(f"CPU time per step: median {statistics.median(cpu_times):.2f} ms (all threads)")
    if compiled:
        print(f"first step (compiles): {first_step_s:.1f} s")
    if flops is not None:
        print(f"FLOPs per step (torch.utils.flop_counter): {flops / 1e9:.3f} GFLOP")
    if cuda:
        print(f"peak CUDA memory over the timed steps: {torch.cuda.max_memory_allocated(dev) / 2**20:.1f} MiB")
    if first_step_growth is not None:
        print(f"peak RSS growth during the first step: {first_step_growth:.1f} MiB "
              f"(from {rss_before:.1f} MiB resident before it)")
    if args.sgemm and not cuda:
        wall, cpu = sgemm_rate()
        print(f"this PyTorch's sgemm 1024²: {wall:.1f} GFLOP/s wall, {cpu:.1f} per CPU-second·thread")
    print(f"load averages (1, 5, 15 min) at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(FAMILIES), default="encoder")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (cuda:N)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the forward and loss (PyTorch 2)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seq-len", type=int, default=0, help="encoder: n; txl: tgt_len = mem_len (default: the bench's)")
    ap.add_argument("--batch", type=int, default=0, help="sequences, or graphs for graphormer (default: the bench's)")
    ap.add_argument("--flops", action="store_true", help="count a step's FLOPs with torch.utils.flop_counter")
    ap.add_argument("--sgemm", action="store_true", help="also measure this PyTorch's sgemm rate (1024²)")
    ap.add_argument("--layers", type=int, default=0, help="encoder: layers (default: the bench's)")
    ap.add_argument("--d-model", type=int, default=0, help="encoder: d (default: the bench's)")
    ap.add_argument("--heads", type=int, default=0, help="encoder: heads (default: the bench's)")
    ap.add_argument("--d-ff", type=int, default=0, help="encoder: d_ff (default: the bench's)")
    ap.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32",
                    help="on a GPU: fp32 (TF32 off), tf32 (TF32 matmuls), bf16 (torch.autocast bfloat16)")
    args = ap.parse_args()
    if args.model != "encoder" and (args.layers or args.d_model or args.heads or args.d_ff):
        ap.error("--layers, --d-model, --heads and --d-ff size the encoder only")
    if args.precision == "tf32" and not args.device.startswith("cuda"):
        ap.error("--precision tf32 is the GPU's switch (use --device cuda)")
    if min(args.layers, args.d_model, args.heads, args.d_ff) < 0:
        ap.error("--layers, --d-model, --heads and --d-ff must be positive")
    if args.steps < 1 or args.warmup < 0:
        ap.error("--steps must be at least 1 and --warmup at least 0")
    if args.compile and not hasattr(torch, "compile"):
        ap.error(f"--compile: PyTorch {torch.__version__} has no torch.compile (it came with PyTorch 2.0)")
    run(args)


if __name__ == "__main__":
    main()
