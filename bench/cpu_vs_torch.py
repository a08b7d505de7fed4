#!/usr/bin/env python3
"""urpe's CPU training step against every PyTorch a user would pick, alternating round by round.

Why: a comparison on a shared machine is only fair when both sides see the same load, so each
round runs every side once, back to back (urpe, Debian's PyTorch 1.13 eager, PyTorch 2 eager,
PyTorch 2 torch.compile; the order rotates from round to round), and the ratios are taken within
a round. The medians over the rounds are the result. Every side's FLOP rate is the model's FLOPs
(`urpe bench step` counts them with the ops' cost formulas; PyTorch's flop counter agrees within
0.1%) over its step time, as a share of the machine's sgemm rate measured by `urpe bench peaks` at
the start.

Each command runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from its environment (the
development machines set them for the tests' sake; a user's machine does not), so OpenBLAS picks
its kernels from the CPU, and every side prints which GEMM kernels it ran.

  bench/cpu_vs_torch.py [--models encoder,txl,graphormer] [--rounds 5] [--steps 20] [--build build]
                        [--torch2 /work/venv-torch2/bin/python] [--torch1 /usr/bin/python3]
                        [--seq-len N --batch B] [--out bench/results/FILE.md]

Prints markdown (and writes it to --out, through a temporary file): the machine, load, versions
and commands, one table per model with each round's times and ratios, and the medians.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def clean_env():
    env = dict(os.environ)
    for name in UNSET:
        env.pop(name, None)
    return env


def load():
    return os.getloadavg()[0]


def run(cmd):
    """Runs cmd (a list) from the repository root with the BLAS variables unset; its output. A
    failure ends the calling script with its name, the command and the end of its output."""
    done = subprocess.run(cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if done.returncode != 0:
        script = os.path.basename(sys.argv[0])
        sys.exit(f"{script}: `{' '.join(cmd)}` failed ({done.returncode}):\n{done.stdout[-3000:]}")
    return done.stdout


class Report:
    """The lines a benchmark prints, kept to be written as its Markdown record."""

    def __init__(self):
        self.lines = []

    def emit(self, text=""):
        print(text, flush=True)
        self.lines.append(text)

    def save(self, path):
        """Writes the record to path through a temporary name (nothing when path is empty)."""
        if not path:
            return
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        os.replace(tmp, path)


def number(pattern, text, what):
    m = re.search(pattern, text)
    if not m:
        sys.exit(f"cpu_vs_torch.py: no {what} in:\n{text[-2000:]}")
    return float(m.group(1))


def first_line(text, prefixes=("urpe ", "PyTorch ")):
    """The program's description line (the first starting with one of prefixes: library warnings
    may come before it)."""
    return next((l for l in text.splitlines() if l.startswith(prefixes)), text.splitlines()[0])


def shell(cmd):
    return "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE " + " ".join(cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="encoder,txl,graphormer")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--build", default="build")
    ap.add_argument("--torch1", default="/usr/bin/python3", help="Python with Debian's PyTorch 1.13 ('' to leave out)")
    ap.add_argument("--torch2", default="/work/venv-torch2/bin/python", help="Python with PyTorch 2 ('' to leave out)")
    ap.add_argument("--seq-len", type=int, default=0)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--attention", default="materialized", help="urpe's attention path (encoder: fused or materialized)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    urpe = os.path.join(args.build, "urpe")
    if not os.path.exists(os.path.join(ROOT, urpe)):
        ap.error(f"--build: no {urpe} under {ROOT} (build it: make build)")
    sizes = (["--seq-len", str(args.seq_len)] if args.seq_len else []) + (["--batch", str(args.batch)] if args.batch else [])

    report = Report()
    emit = report.emit

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, stdout=subprocess.PIPE,
                           text=True).stdout.strip()
    emit(f"# urpe against PyTorch on the CPU, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    emit()
    emit(f"- machine: {next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')}, "
         f"{os.cpu_count()} cores; load average at the start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    emit(f"- urpe at {commit}{' (with uncommitted changes)' if dirty else ''}, `{urpe}`")
    peaks_cmd = [urpe, "bench", "peaks"]
    peaks = run(peaks_cmd)
    peak = number(r"ceilings: compute ([0-9.]+) GFLOP/s", peaks, "compute ceiling")
    emit(f"- the machine's sgemm rate (`{shell(peaks_cmd)}`, load {load():.2f} after): **{peak:.1f} GFLOP/s**")
    sides = [("urpe", [urpe, "bench", "step", "--repeats", str(args.steps), "--attention", args.attention] + sizes)]
    if args.torch1:
        sides.append(("PyTorch 1.13 eager", [args.torch1, "tools/torch_bench.py", "--steps", str(args.steps)] + sizes))
    if args.torch2:
        sides.append(("PyTorch 2 eager", [args.torch2, "tools/torch_bench.py", "--steps", str(args.steps)] + sizes))
        sides.append(("PyTorch 2 compile", [args.torch2, "tools/torch_bench.py", "--compile", "--steps", str(args.steps)] + sizes))
    for name, cmd in sides[1:]:
        if name.endswith("compile"):
            continue
        first = run(cmd[:2] + ["--steps", "1", "--warmup", "0", "--sgemm"])
        sgemm = next((l for l in first.splitlines() if l.startswith("this PyTorch's sgemm")), "")
        emit(f"- {name}: {first_line(first)}; {sgemm}")
    emit("- every command below ran as `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE COMMAND`; each time is the "
         f"median of {args.steps} timed steps after 5 warm-up steps (torch.compile's compilation is in the warm-up)")

    for model in args.models.split(","):
        model_sides = [(name, cmd + ["--model", model]) for name, cmd in sides]
        if model != "encoder" and args.attention != "materialized":
            model_sides[0] = ("urpe", [c for c in model_sides[0][1] if c not in ("--attention", args.attention)])
        emit()
        emit(f"## {model}")
        emit()
        for name, cmd in model_sides:
            emit(f"    {shell(cmd)}")
        emit()
        rows = []
        header = None
        for r in range(args.rounds):
            order = model_sides[r % len(model_sides):] + model_sides[:r % len(model_sides)]
            before = load()
            times, cpu, outputs = {}, {}, {}
            for name, cmd in order:
                out = run(cmd)
                outputs[name] = out
                times[name] = number(r"median ([0-9.]+) ms per step", out, f"{name} step time")
                cpu[name] = number(r"CPU time per step: median ([0-9.]+) ms", out, f"{name} CPU time")
            after = load()
            if header is None:
                header = outputs
                flops = number(r"FLOPs per step: ([0-9.]+) GFLOP", outputs["urpe"], "FLOP count")
                config = next(l for l in outputs["urpe"].splitlines() if l.startswith("bench config"))
                emit(f"{config}; {flops:.3f} GFLOP a step (urpe's count)")
                for name, _ in model_sides:
                    emit(f"- {name}: {first_line(outputs[name])}")
                emit()
                emit("Wall-clock ratios are fair only when the load stayed put over the round; the CPU-time "
                     "ratio (urpe's CPU time of a step over the fastest peer's, both on 2 threads) moves much "
                     "less with the load.")
                emit()
                names = [n for n, _ in model_sides]
                emit("| round | load before → after | " + " | ".join(f"{n} ms (CPU ms)" for n in names) +
                     " | " + " | ".join(f"urpe / {n}" for n in names[1:]) +
                     " | urpe / fastest PyTorch | CPU time: urpe / fastest |")
                emit("|---|---|" + "--:|" * (2 * len(names) + 1))
            peers = [n for n, _ in model_sides[1:]]
            fastest = min(times[n] for n in peers) if peers else float("nan")
            fastest_cpu = min(cpu[n] for n in peers) if peers else float("nan")
            row = {"times": times, "cpu": cpu, "ratios": {n: times["urpe"] / times[n] for n in peers},
                   "fastest": times["urpe"] / fastest, "fastest_cpu": cpu["urpe"] / fastest_cpu,
                   "load": (before, after)}
            rows.append(row)
            emit(f"| {r + 1} (order: {', '.join(n for n, _ in order)}) | {before:.2f} → {after:.2f} | " +
                 " | ".join(f"{times[n]:.2f} ({cpu[n]:.1f})" for n, _ in model_sides) + " | " +
                 " | ".join(f"{row['ratios'][n]:.3f}" for n in peers) + f" | {row['fastest']:.3f} | "
                 f"{row['fastest_cpu']:.3f} |")
        med = {n: statistics.median(r["times"][n] for r in rows) for n, _ in model_sides}
        med_cpu = {n: statistics.median(r["cpu"][n] for r in rows) for n, _ in model_sides}
        peers = [n for n, _ in model_sides[1:]]
        emit(f"| **median** | | " + " | ".join(f"**{med[n]:.2f}** ({med_cpu[n]:.1f})" for n, _ in model_sides) + " | " +
             " | ".join(f"**{statistics.median(r['ratios'][n] for r in rows):.3f}**" for n in peers) +
             f" | **{statistics.median(r['fastest'] for r in rows):.3f}** | "
             f"**{statistics.median(r['fastest_cpu'] for r in rows):.3f}** |")
        emit()
        emit(f"FLOP rate ({flops:.3f} GFLOP a step over the median step; share of the {peak:.1f} GFLOP/s sgemm rate):")
        emit()
        for n, _ in model_sides:
            rate = flops / (med[n] * 1e-3)
            emit(f"- {n}: {rate:.1f} GFLOP/s, {100 * rate / peak:.1f}%")
        for n, _ in model_sides:
            for line in header[n].splitlines():
                if line.startswith(("peak RSS growth", "peak memory", "host allocator", "first step")):
                    emit(f"- {n}: {line}")
    emit()
    emit(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report.save(args.out)


if __name__ == "__main__":
    main()
