#!/usr/bin/env python3
"""PyTorch reference for urpe's models: builds golden fixtures and times a training step.

Why: the C++ engine must compute exactly the model of docs/synthetic_encoder.md. This script writes the
same model in PyTorch, independently of the C++ code, and stores weights, a batch, logits, the loss
and every parameter gradient in small safetensors files under tests/fixtures/. The C++ tests load
them (no PyTorch needed at test time) and compare.

  python3 tools/torch_reference.py fixtures [--out tests/fixtures]   # rewrite the fixtures
  python3 tools/torch_reference.py --bench                            # time the bench step
  python3 tools/torch_reference.py --bench --seq-len 1024 --batch 4   # the long-sequence bench
  python3 tools/torch_reference.py --bench --device cuda              # the same step on a GPU
  python3 tools/torch_reference.py --profile [--out DIR] [--device cuda]
                                   # torch.profiler on the bench step: key averages in the layout of
                                   # `urpe profile`'s profile.md (docs/profiling.md#beside-pytorch)
  python3 tools/torch_reference.py --table5 [--device cpu|cuda] [--lengths 128,256,512] [--batch 32]
                                                                      # Table 5 in PyTorch eager

Fixture version 1. Everything is computed in float64 from float32-rounded weights, so the stored
reference values are the exact maths, not float32 rounding of another implementation.
Needs PyTorch (Debian: python3-torch; for --bench also libopenblas0-openmp, see below).
"""
import argparse
import functools
import json
import math
import os
import struct
import sys
import time


def _runtime_environment():
    """The OpenMP spinning urpe itself applies (app/cli/runtime_env.h): long OpenMP spin-waits
    steal busy cores. Set before torch (and its OpenMP runtime) is loaded; a value already in the
    environment is kept. The BLAS kernels are chosen in _prefer_openmp_blas, as urpe chooses them."""
    if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = "1000"


def _debian_torch():
    """True for Debian's python3-torch (it links the system libblas.so.3); PyTorch from PyPI
    brings its own BLAS (MKL on x86), which the system OpenBLAS must not shadow."""
    import importlib.util
    spec = importlib.util.find_spec("torch")
    return bool(spec and spec.origin and spec.origin.startswith("/usr/lib/python3/"))


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return []


def _prefer_openmp_blas():
    """Debian's torch links the system libblas.so.3, which the alternatives system usually points
    at the pthreads build of OpenBLAS. Its thread pool then competes with torch's own OpenMP pool
    for the cores (measured on 2 cores: a training step 151-160 ms with the OpenMP build, 165-231
    ms with the pthreads one). urpe links the OpenMP build, so torch gets it too: loading it first
    by full path makes the loader resolve torch's libblas.so.3 to the library already loaded.
    URPE_TORCH_BLAS=system keeps whatever the system links.
    Kernels, as urpe does (ops/blas_runtime.h): OpenBLAS picks them from the CPU model when it is
    loaded, and falls back to its SSE3 "Prescott" kernels on models it does not know (VMs); only
    then is OPENBLAS_CORETYPE set (SkylakeX or Haswell, by the CPU's flags) and the script run
    again, since OpenBLAS reads the variable once, at load. A value in the environment is kept."""
    if os.environ.get("URPE_TORCH_BLAS") == "system" or not _debian_torch():
        return
    import ctypes
    folder = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
    for name in ("libblas.so.3", "liblapack.so.3"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    core = openblas_core()
    if core == "Prescott" and "OPENBLAS_CORETYPE" not in os.environ:
        flags = _cpu_flags()
        better = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else ""
        if better:
            os.environ["OPENBLAS_CORETYPE"] = better
            os.execv(sys.executable, [sys.executable] + sys.argv)


def openblas_core():
    """The kernel family of the OpenBLAS loaded in this process ("Cooperlake", "Haswell", ...), or
    None when none is loaded."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({l.split()[-1] for l in f if "libopenblas" in l and ".so" in l})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return None


_runtime_environment()
_prefer_openmp_blas()
import torch  # noqa: E402  (after the BLAS kernel choice above)

FIXTURE_VERSION = "1"


# ---- safetensors, written by hand (the format is 8 bytes of header length, a JSON header, data) ----

def save_safetensors(path, tensors, metadata):
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        if t.dtype in (torch.float32, torch.float64):
            data, dtype = t.to(torch.float32).numpy().tobytes(), "F32"
        else:
            data, dtype = t.to(torch.int32).numpy().tobytes(), "I32"
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


# ---- the model (docs/synthetic_encoder.md#encoder, docs/urpe_attention.md: URPE, T5 buckets) ----

def t5_bucket(rel, bidirectional=True, num_buckets=32, max_distance=128):
    base, nb = 0, num_buckets
    if bidirectional:
        nb //= 2
        base = nb if rel > 0 else 0
        n = abs(rel)
    else:
        n = max(-rel, 0)
    max_exact = nb // 2
    if n < max_exact:
        return base + n
    # float32 log as in the C++ code and T5's float32 tensors
    f = torch.tensor
    scaled = (torch.log(f(n / max_exact, dtype=torch.float32)) /
              torch.log(f(max_distance / max_exact, dtype=torch.float32)) * (nb - max_exact))
    return base + min(max_exact + int(scaled.item()), nb - 1)


@functools.lru_cache(maxsize=None)
def bucket_map(n, kind, device="cpu"):
    """(n, n) bucket of each (i, j), a function of j − i: the 2n − 1 distances' buckets, gathered.
    Cached per (n, kind, device): the timed models (--bench, --table5) must not rebuild it, or
    move it to the GPU, on every forward (a Python loop over n² cells cost ~0.3 s at n = 1024)."""
    rel = torch.arange(n)[None, :] - torch.arange(n)[:, None]  # j − i
    if kind == "unique":
        per_distance = torch.arange(2 * n - 1)
    else:
        per_distance = torch.tensor([t5_bucket(r) for r in range(-(n - 1), n)], dtype=torch.long)
    return per_distance[rel + (n - 1)].to(device)


def bucket_count(n, kind):
    return 2 * n - 1 if kind == "unique" else 32


def split_pe(pe):
    """'rope+urpe' → ('rope', True); 'urpe' alone is T5-RPE + URPE (the paper's model)."""
    if pe.endswith("+urpe"):
        return pe[: -len("+urpe")], True
    return pe, False


def alibi_slopes(heads):
    """Press et al.'s get_slopes (github.com/ofirpress/attention_with_linear_biases)."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(heads).is_integer():
        return power_of_2(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: heads - closest]


def sinusoid(n, d):
    """Vaswani et al.: [p, 2i] = sin(p / 10000^(2i/d)), [p, 2i+1] = cos(same)."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    i2 = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / 10000.0 ** (i2 / d)
    t = torch.zeros(n, d, dtype=torch.float64)
    t[:, 0::2] = torch.sin(angle)
    t[:, 1::2] = torch.cos(angle[:, : d // 2])
    return t


def rotate(x, base=10000.0):
    """RoPE in the half-split layout (GPT-NeoX / Llama rotate_half); x (..., N, D)."""
    N, D = x.shape[-2], x.shape[-1]
    inv = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    angle = torch.arange(N, dtype=torch.float64)[:, None] * inv  # (N, D/2)
    cos, sin = torch.cos(angle).repeat(1, 2), torch.sin(angle).repeat(1, 2)
    half = D // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def encoder_parameter_shapes(cfg):
    d, h, f = cfg["d_model"], cfg["heads"], cfg["d_ff"]
    base, on_top = split_pe(cfg["pe"])
    shapes = {"embed_tokens.weight": (cfg["vocab"], d), "embed_norm.weight": (d,), "embed_norm.bias": (d,)}
    if base == "ape":
        shapes["embed_positions.weight"] = (cfg["seq_len"], d)
    if base in ("rpe", "urpe"):
        shapes["rel_pos_bias"] = (h, bucket_count(cfg["seq_len"], cfg["rpe_kind"]))
    if base == "urpe" or on_top:
        shapes["urpe_c"] = (h, bucket_count(cfg["seq_len"], cfg["urpe_kind"]))
    for l in range(cfg["layers"]):
        p = f"layers.{l}."
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            shapes[p + f"self_attn.{proj}.weight"] = (d, d)
            shapes[p + f"self_attn.{proj}.bias"] = (d,)
        shapes[p + "self_attn_norm.weight"] = (d,)
        shapes[p + "self_attn_norm.bias"] = (d,)
        shapes[p + "ffn.fc1.weight"] = (f, d)
        shapes[p + "ffn.fc1.bias"] = (f,)
        shapes[p + "ffn.fc2.weight"] = (d, f)
        shapes[p + "ffn.fc2.bias"] = (d,)
        shapes[p + "ffn_norm.weight"] = (d,)
        shapes[p + "ffn_norm.bias"] = (d,)
        if base == "shaw":
            shapes[p + "self_attn.shaw_keys"] = (2 * cfg["shaw_clip"] + 1, d // h)
            shapes[p + "self_attn.shaw_values"] = (2 * cfg["shaw_clip"] + 1, d // h)
    shapes["head.weight"] = (cfg["num_classes"], d)
    shapes["head.bias"] = (cfg["num_classes"],)
    return shapes


def encoder_forward(cfg, P, tokens):
    """tokens (B, N) long → logits (B, N, C). P: name → float64 tensor."""
    B, N = tokens.shape
    d, H = cfg["d_model"], cfg["heads"]
    dh = d // H
    base, on_top = split_pe(cfg["pe"])
    x = P["embed_tokens.weight"][tokens]
    if base == "ape":
        x = x + P["embed_positions.weight"][:N]
    if base == "sinusoidal":
        x = x + sinusoid(N, d)
    x = layer_norm(x, P["embed_norm.weight"], P["embed_norm.bias"])
    bias = C = None
    if base in ("rpe", "urpe"):
        m = bucket_map(cfg["seq_len"], cfg["rpe_kind"], str(tokens.device))[:N, :N]
        bias = P["rel_pos_bias"][:, m]  # (H, N, N)
    if base == "alibi":  # fixed: −m_h·|i − j|
        dist = (torch.arange(N)[None, :] - torch.arange(N)[:, None]).abs().to(torch.float64)
        bias = -torch.tensor(alibi_slopes(H), dtype=torch.float64)[:, None, None] * dist
    if base == "shaw":  # clip(j − i, −k, k) + k
        k_clip = cfg["shaw_clip"]
        rel = (torch.arange(N)[None, :] - torch.arange(N)[:, None]).clamp(-k_clip, k_clip) + k_clip
    if base == "urpe" or on_top:
        m = bucket_map(cfg["seq_len"], cfg["urpe_kind"], str(tokens.device))[:N, :N]
        C = P["urpe_c"][:, m]

    def lin(x, name):
        return x @ P[name + ".weight"].T + P[name + ".bias"]

    for l in range(cfg["layers"]):
        p = f"layers.{l}."
        q = lin(x, p + "self_attn.q_proj").view(B, N, H, dh).transpose(1, 2) * dh ** -0.5
        k = lin(x, p + "self_attn.k_proj").view(B, N, H, dh).transpose(1, 2)
        v = lin(x, p + "self_attn.v_proj").view(B, N, H, dh).transpose(1, 2)
        if base == "rope":
            q, k = rotate(q), rotate(k)
        s = q @ k.transpose(-1, -2)
        if base == "shaw":  # Shaw et al. eq. 4: q_i·a^K_ij, same scale as q·k
            s = s + torch.einsum("bhid,ijd->bhij", q, P[p + "self_attn.shaw_keys"][rel])
        if bias is not None:
            s = s + bias
        a = torch.softmax(s, dim=-1)
        if C is not None:
            a = a * C  # URPE: after the softmax
        o = a @ v
        if base == "shaw":  # eq. 3: Σ_j a_ij·a^V_ij
            o = o + torch.einsum("bhij,ijd->bhid", a, P[p + "self_attn.shaw_values"][rel])
        o = o.transpose(1, 2).reshape(B, N, d)
        x = layer_norm(x + lin(o, p + "self_attn.out_proj"), P[p + "self_attn_norm.weight"], P[p + "self_attn_norm.bias"])
        hdn = torch.nn.functional.gelu(lin(x, p + "ffn.fc1"))  # exact erf GELU
        x = layer_norm(x + lin(hdn, p + "ffn.fc2"), P[p + "ffn_norm.weight"], P[p + "ffn_norm.bias"])
    return lin(x, "head")


# ---- golden fixtures (this script's encoder, and torch_reference_txl.py's Transformer-XL) ----

def random_fixture_parameters(shapes, g, gain_suffix):
    """A fixture's weights, drawn from generator g in the order of `shapes` (name -> shape), so a
    fixture's seed fixes them: LayerNorm gains (names ending in gain_suffix) 1 + N(0, 0.1²),
    URPE's C 1 + N(0, 0.5²) (a random C: every path matters), the rest N(0, 0.3²). Rounded to
    float32 (what the C++ side loads), then held in float64 with gradients."""
    params = {}
    for pname, shape in shapes.items():
        if pname.endswith(gain_suffix):
            w = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif pname == "urpe_c":
            w = 1.0 + 0.5 * torch.randn(shape, generator=g)
        else:
            w = 0.3 * torch.randn(shape, generator=g)
        params[pname] = w.to(torch.float32).to(torch.float64).requires_grad_(True)
    return params


def store_parameters_and_gradients(tensors, params):
    """Adds "param.<name>" and, after backward, "grad.<name>" of every parameter to a fixture."""
    for pname, p in params.items():
        tensors["param." + pname] = p
        tensors["grad." + pname] = p.grad


def make_encoder_fixture(name, cfg, seed, out_dir):
    g = torch.Generator().manual_seed(seed)
    params = random_fixture_parameters(encoder_parameter_shapes(cfg), g, "norm.weight")
    B, N = cfg["batch"], cfg["seq_len"]
    tokens = torch.randint(0, cfg["vocab"], (B, N), generator=g)
    targets = torch.randint(0, cfg["num_classes"], (B, N), generator=g)
    targets[0, 1] = -100  # one ignored position
    logits = encoder_forward(cfg, params, tokens)
    loss = torch.nn.functional.cross_entropy(logits.reshape(B * N, -1), targets.reshape(-1), ignore_index=-100)
    loss.backward()
    tensors = {"input.tokens": tokens, "input.targets": targets, "output.logits": logits, "output.loss": loss.reshape(())}
    store_parameters_and_gradients(tensors, params)
    meta = dict(cfg)
    meta["fixture_version"] = FIXTURE_VERSION
    meta["torch_version"] = torch.__version__
    save_safetensors(os.path.join(out_dir, f"encoder_{name}.safetensors"), tensors, meta)
    print(f"wrote encoder_{name}.safetensors: loss {loss.item():.6f}")


ENCODER_FIXTURES = {
    # name: (pe, rpe_kind, urpe_kind, seq_len, seed); the seeds of the first five are those they
    # were first written with (100 + their place in sorted order then), so rewriting keeps them.
    "none": ("none", "unique", "unique", 7, 101),
    "ape": ("ape", "unique", "unique", 7, 100),
    "rpe": ("rpe", "unique", "unique", 7, 102),
    "urpe": ("urpe", "unique", "unique", 7, 103),
    "urpe_bucketed": ("urpe", "bucketed", "bucketed", 21, 104),
    # the other encodings, and URPE on top of them (docs/theory.md#which-encodings-can-tell-positions-apart)
    "sinusoidal": ("sinusoidal", "unique", "unique", 7, 105),
    "alibi": ("alibi", "unique", "unique", 7, 106),
    "rope": ("rope", "unique", "unique", 7, 107),
    "shaw": ("shaw", "unique", "unique", 9, 108),  # n = 9 > 2k + 1 = 7: the clipping matters
    "rope_urpe": ("rope+urpe", "unique", "unique", 7, 109),
    "alibi_urpe": ("alibi+urpe", "unique", "unique", 7, 110),
    "sinusoidal_urpe": ("sinusoidal+urpe", "unique", "unique", 7, 111),
    "shaw_urpe_bucketed": ("shaw+urpe", "unique", "bucketed", 21, 112),
}


def write_fixtures(out_dir, only=None):
    os.makedirs(out_dir, exist_ok=True)
    for name, (pe, rk, uk, n, seed) in sorted(ENCODER_FIXTURES.items()):
        if only and name not in only:
            continue
        cfg = {"vocab": 11, "seq_len": n, "layers": 2, "d_model": 8, "heads": 2, "d_ff": 12,
               "num_classes": n, "pe": pe, "rpe_kind": rk, "urpe_kind": uk, "batch": 3}
        if split_pe(pe)[0] == "shaw":
            cfg["shaw_clip"] = 3
        make_encoder_fixture(name, cfg, seed, out_dir)


# ---- benchmark: the same training step as `urpe bench step --device cpu` ----

BENCH = {"seq_len": 128, "vocab": 100, "layers": 2, "d_model": 128, "heads": 4, "d_ff": 512,
         "batch": 32, "pe": "urpe", "rpe_kind": "unique", "urpe_kind": "unique"}


def bench_parameters(cfg, g):
    """urpe's own initialisation for the timed models: LayerNorm gains and C at 1, the rest
    N(0, 0.02²) drawn from generator g in the order of encoder_parameter_shapes."""
    return {name: torch.ones(shape) if (name.endswith("norm.weight") or name == "urpe_c")
            else 0.02 * torch.randn(shape, generator=g)
            for name, shape in encoder_parameter_shapes(cfg).items()}


def blas_in_use():
    """Debian's torch links the system libblas.so.3; report which implementation it resolves to."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if ".so" in line}
    except OSError:
        libs = set()
    names = sorted({os.path.relpath(l, os.path.dirname(os.path.dirname(l))) for l in libs if "blas" in l.lower()})
    return ", ".join(names) or "unknown"


def peak_rss_reset():
    """Starts a new VmHWM window (Linux: 5 to /proc/self/clear_refs); False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def rss_mib(field):
    """VmHWM (peak) or VmRSS (now) of this process in MiB; None without /proc."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _bench_setup(threads, seq_len, batch, device):
    """The bench step's model, parameters and Adam on `device` (urpe's `bench step` config, with
    its sequence length and batch when given), the synchronisation that ends a timed step, and the
    generator (seed 0) that goes on to draw the batches."""
    torch.set_num_threads(threads)
    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    cfg = dict(BENCH)
    if seq_len:
        cfg["seq_len"] = seq_len
    if batch:
        cfg["batch"] = batch
    cfg["num_classes"] = cfg["seq_len"]
    g = torch.Generator().manual_seed(0)
    params = {name: w.to(dev).requires_grad_(True) for name, w in bench_parameters(cfg, g).items()}
    opt = torch.optim.Adam(params.values(), lr=1e-4)
    return dev, sync, cfg, params, opt, g


def bench(warmup, steps, threads, seq_len=None, batch=None, device="cpu"):
    """The step of `urpe bench step --device cpu|cuda`: on CUDA the step ends with a device
    synchronisation (as urpe's does) and the memory line is the caching allocator's peak."""
    dev, sync, cfg, params, opt, g = _bench_setup(threads, seq_len, batch, device)
    B, N = cfg["batch"], cfg["seq_len"]
    times = []
    # The resident set's growth over the first step (every buffer fresh from the system), the
    # quantity `urpe bench step` prints too.
    rss_before = rss_mib("VmRSS")
    peak_window = peak_rss_reset()
    first_step_growth = None
    for step in range(warmup + steps):
        if step == 1 and peak_window and rss_before is not None:
            first_step_growth = rss_mib("VmHWM") - rss_before
        tokens = torch.randint(0, cfg["vocab"], (B, N), generator=g).to(dev)
        targets = torch.arange(N).repeat(B, 1).to(dev)
        sync()
        if step == warmup and dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        t0 = time.perf_counter()
        opt.zero_grad()
        logits = encoder_forward(cfg, params, tokens)
        loss = torch.nn.functional.cross_entropy(logits.reshape(B * N, -1), targets.reshape(-1))
        loss.backward()
        opt.step()
        sync()
        if step >= warmup:
            times.append((time.perf_counter() - t0) * 1000)
    if dev.type == "cuda":
        print(f"PyTorch {torch.__version__} eager, device {device} ({torch.cuda.get_device_name(dev)}), "
              f"TF32 matmul {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}")
        print(f"bench config: n={N} d={cfg['d_model']} heads={cfg['heads']} layers={cfg['layers']} "
              f"d_ff={cfg['d_ff']} batch={B} pe=urpe; {steps} timed steps after {warmup} warm-up")
        times.sort()
        print(f"median {times[len(times) // 2]:.2f} ms per step")
        print(f"peak CUDA memory over the timed steps: {torch.cuda.max_memory_allocated(dev) / 2**20:.1f} MiB")
        return
    blas = blas_in_use()
    print(f"PyTorch {torch.__version__}, {threads} threads, BLAS: {blas} ({openblas_core() or 'no OpenBLAS'} kernels), "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}, "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', 'unset')}")
    if "openblas" not in blas:
        print("warning: PyTorch is not using OpenBLAS (install libopenblas0-openmp); the reference "
              "BLAS is ~30x slower on large matmuls and the comparison would be unfair", file=sys.stderr)
    times.sort()
    print(f"bench config: n={N} d={cfg['d_model']} heads={cfg['heads']} layers={cfg['layers']} "
          f"d_ff={cfg['d_ff']} batch={B} pe=urpe; {steps} timed steps after {warmup} warm-up")
    print(f"median {times[len(times) // 2]:.2f} ms per step")
    if first_step_growth is not None:
        print(f"peak RSS growth during the first step: {first_step_growth:.1f} MiB "
              f"(from {rss_before:.1f} MiB resident before it)")


# ---- profile: torch.profiler on the bench step, in the layout of `urpe profile` ----

def phase_of(event):
    """The phase urpe would give an op: backward inside the autograd engine's evaluate_function,
    optimizer inside Optimizer.step, else forward."""
    e = event
    while e is not None:
        if e.name.startswith("autograd::engine::evaluate_function"):
            return "backward"
        if e.name.startswith("Optimizer.step"):
            return "optimizer"
        e = e.cpu_parent
    return "forward"


def urpe_peaks(device_type, path=None):
    """This machine's entry of urpe's peaks cache (`urpe bench peaks --device cpu|cuda`) for
    device_type, or None: the same file and host-name field urpe reads
    (base/profile/machine_peaks.h)."""
    if path is None:
        path = os.environ.get("URPE_PEAKS_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "urpe", "peaks.json")
    try:
        with open(path) as f:
            machines = json.load(f)["machines"]
    except (OSError, ValueError, KeyError):
        return None
    host = os.uname().nodename
    for m in machines:
        if m.get("device") == device_type and m["key"].split(" | ")[-1] == host:
            return m
    return None


def profile_bench(warmup, steps, threads, out_dir, seq_len=None, batch=None, device="cpu"):
    """torch.profiler over `steps` bench steps after `warmup`; writes the key averages per step in
    urpe's columns (op, phase, calls, self, total, % of step, GFLOP/s, GB/s, % of roofline) to
    OUT/profile_torch.md and the Chrome trace to OUT/trace_torch.json. PyTorch counts FLOPs for
    matmul-like ops only and no bytes, so GB/s is "—" and % of roofline is the compute bound
    (FLOPs / urpe's measured sgemm peak) over self time, for the ops that have FLOPs."""
    from torch.profiler import ProfilerActivity, profile, record_function
    dev, sync, cfg, params, opt, g = _bench_setup(threads, seq_len, batch, device)
    B, N = cfg["batch"], cfg["seq_len"]

    def one_step():
        tokens = torch.randint(0, cfg["vocab"], (B, N), generator=g).to(dev)
        targets = torch.arange(N).repeat(B, 1).to(dev)
        opt.zero_grad()
        logits = encoder_forward(cfg, params, tokens)
        loss = torch.nn.functional.cross_entropy(logits.reshape(B * N, -1), targets.reshape(-1))
        loss.backward()
        opt.step()
        sync()

    for _ in range(warmup):
        one_step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    step_ms = []
    with profile(activities=activities, with_flops=True) as prof:
        for s in range(steps):
            t0 = time.perf_counter()
            with record_function(f"step {s + 1}"):
                one_step()
            step_ms.append((time.perf_counter() - t0) * 1000)
    events = [e for e in prof.events() if not e.name.startswith("step ")]
    rows = {}
    for e in events:
        key = (e.name, phase_of(e))
        r = rows.setdefault(key, {"calls": 0, "self": 0.0, "total": 0.0, "flops": 0.0})
        r["calls"] += 1
        # On a GPU the kernels' time attributed to the op (as urpe's stream times), else CPU time.
        on_gpu = dev.type == "cuda"
        r["self"] += (e.self_cuda_time_total if on_gpu else e.self_cpu_time_total) / 1000.0
        r["total"] += (e.cuda_time_total if on_gpu else e.cpu_time_total) / 1000.0
        r["flops"] += getattr(e, "flops", 0) or 0
    step = sum(step_ms) / len(step_ms)
    peaks = urpe_peaks(dev.type)
    ops_self = sum(r["self"] for r in rows.values()) / steps

    def fmt_rate(amount, ms):
        return f"{amount / (ms * 1e-3) / 1e9:.2f}" if amount > 0 and ms > 0 else "—"

    lines = [f"# torch.profiler: the bench step, {device}", "",
             f"- PyTorch {torch.__version__}, {threads} threads" +
             (f", BLAS: {blas_in_use()}" if dev.type == "cpu" else f", {torch.cuda.get_device_name(dev)}"),
             f"- bench config: n={N} d={cfg['d_model']} heads={cfg['heads']} layers={cfg['layers']} "
             f"d_ff={cfg['d_ff']} batch={B} pe=urpe; {steps} profiled steps after {warmup} warm-up; "
             f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
             "- op times: " + ("the CUDA kernel time torch.profiler attributes to each op" if dev.type == "cuda"
                              else "the CPU time torch.profiler records per op") +
             " (self excludes the ops it calls); every time is per step",
             "- roofline: " + (f"compute only, FLOPs / {peaks['gemm_gflops']:.1f} GFLOP/s (urpe's measured sgemm); "
                               "PyTorch reports no bytes" if peaks else "no urpe peaks for this machine (urpe bench peaks)"),
             "", "## The step", "", "| | ms per step | % of step |", "|---|--:|--:|",
             f"| measured step (mean; median {sorted(step_ms)[len(step_ms) // 2]:.3f}) | {step:.3f} | 100.0 |",
             f"| Σ self time of the ops | {ops_self:.3f} | {100 * ops_self / step:.1f} |", "",
             "## Ops (key averages, sorted by self time)", "",
             "| op | phase | calls | self ms | total ms | % of step | GFLOP/s | GB/s | % of roofline |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for (name, phase), r in sorted(rows.items(), key=lambda kv: (-kv[1]["self"], kv[0][0])):
        calls, self_ms, total_ms, flops = r["calls"] / steps, r["self"] / steps, r["total"] / steps, r["flops"] / steps
        bound = flops / (peaks["gemm_gflops"] * 1e9) * 1e3 if peaks and flops > 0 else 0.0
        lines.append(f"| {name} | {phase} | {calls:g} | {self_ms:.3f} | {total_ms:.3f} | {100 * self_ms / step:.1f} | "
                     f"{fmt_rate(flops, self_ms)} | — | {f'{100 * bound / self_ms:.1f}' if bound > 0 and self_ms > 0 else '—'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        def write_text(path):
            with open(path, "w") as f:
                f.write(text)

        for name, write in (("profile_torch.md", write_text), ("trace_torch.json", prof.export_chrome_trace)):
            tmp = os.path.join(out_dir, name + ".tmp")
            write(tmp)
            os.replace(tmp, os.path.join(out_dir, name))
        print(f"written: {os.path.join(out_dir, 'profile_torch.md')}, {os.path.join(out_dir, 'trace_torch.json')}")


# ---- Table 5: the paper's model, inference, RPE vs URPE, in PyTorch eager ----

def table5(device, lengths, batch, layers, repeats, threads):
    """The same model and rows as `urpe repro table5` (materialised attention, which is what
    eager PyTorch does): median forward time under no_grad and peak memory (CUDA: the caching
    allocator's max_memory_allocated; CPU: the process's VmHWM over the row)."""
    torch.set_num_threads(threads)
    dev = torch.device(device)
    print(f"PyTorch {torch.__version__} eager, device {device}"
          + (f" ({torch.cuda.get_device_name(dev)})" if dev.type == "cuda" else f", {threads} threads, BLAS: {blas_in_use()}")
          + f"; 12 heads, d = 768, d_ff = 3072, {layers} layers, batch {batch}; median of {repeats}; "
          + f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    # CPU ms: the process's CPU time (user + system, all threads) over one forward, which a busy
    # shared machine inflates much less than wall time (urpe's results.md has the same column).
    print("| n | pe | median ms | CPU ms | peak MiB |")
    print("|---|---|---|---|---|")
    for n in lengths:
        for pe in ("rpe", "urpe"):
            cfg = {"seq_len": n, "vocab": 1000, "layers": layers, "d_model": 768, "heads": 12,
                   "d_ff": 3072, "num_classes": n, "pe": pe, "rpe_kind": "unique", "urpe_kind": "unique"}
            g = torch.Generator().manual_seed(1)
            params = {name: w.to(dev) for name, w in bench_parameters(cfg, g).items()}
            tokens = torch.randint(0, 1000, (batch, n), generator=g).to(dev)
            sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
            with torch.no_grad():
                encoder_forward(cfg, params, tokens)  # warm-up
                sync()
                if dev.type == "cuda":
                    torch.cuda.reset_peak_memory_stats(dev)
                else:
                    peak_rss_reset()
                times, cpu_times = [], []
                for _ in range(repeats):
                    t0, c0 = time.perf_counter(), time.process_time()
                    encoder_forward(cfg, params, tokens)
                    sync()
                    times.append((time.perf_counter() - t0) * 1000)
                    cpu_times.append((time.process_time() - c0) * 1000)
            times.sort()
            cpu_times.sort()
            peak = (torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == "cuda" else rss_mib("VmHWM"))
            print(f"| {n} | {pe} | {times[len(times) // 2]:.1f} | {cpu_times[len(cpu_times) // 2]:.1f} | {peak:.1f} |",
                  flush=True)
            del params, tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", default="fixtures", choices=["fixtures"])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
    ap.add_argument("--only", default="", help="comma-separated fixture names to write (default: all)")
    ap.add_argument("--bench", action="store_true", help="time the bench training step instead")
    ap.add_argument("--profile", action="store_true",
                    help="torch.profiler on the bench step (--warmup, --steps default 5, --out DIR for the files)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seq-len", type=int, default=None, help="--bench: sequence length (default 128)")
    ap.add_argument("--batch", type=int, default=None, help="--bench: batch (default 32); --table5: batch (default 32)")
    ap.add_argument("--table5", action="store_true", help="time the paper's Table 5 model (inference) instead")
    ap.add_argument("--device", default="cpu", help="--bench, --table5: cpu or cuda")
    ap.add_argument("--lengths", default="128,256,512", help="--table5: sequence lengths")
    ap.add_argument("--layers", type=int, default=12, help="--table5: encoder layers")
    ap.add_argument("--repeats", type=int, default=3, help="--table5: timed forwards per row")
    args = ap.parse_args()
    if args.table5:
        lengths = [int(x) for x in args.lengths.split(",")]
        table5(args.device, lengths, args.batch or 32, args.layers, args.repeats, args.threads)
    elif args.profile:
        out = None if args.out == ap.get_default("out") else args.out
        profile_bench(args.warmup, 5 if args.steps == ap.get_default("steps") else args.steps, args.threads, out,
                      args.seq_len, args.batch, args.device)
    elif args.bench:
        bench(args.warmup, args.steps, args.threads, args.seq_len, args.batch, args.device)
    else:
        torch.set_default_dtype(torch.float64)
        only = [n for n in args.only.split(",") if n]
        unknown = [n for n in only if n not in ENCODER_FIXTURES]
        if unknown:
            ap.error(f"--only: unknown fixture {unknown[0]}; expected some of {', '.join(sorted(ENCODER_FIXTURES))}")
        write_fixtures(os.path.normpath(args.out), only)


if __name__ == "__main__":
    main()
