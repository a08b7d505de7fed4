#!/usr/bin/env python3
"""Where a CPU training step's CPU time goes, by kind of work, from `perf` samples.

Why: `urpe profile` times each op by the wall clock, which a shared machine stretches (an op
waits for a core that another process holds). `perf record -e cpu-clock` samples only while this
process's threads run, so its shares hold under load. This script samples `urpe bench step` (or any
command), sorts the samples by function and sums them into kinds of work: the GEMM kernels
themselves, OpenBLAS's packing and C initialisation, the URPE core, GELU, layer norm, Adam, copies,
small elementwise ops, the OpenMP runtime and the kernel's scheduler. Shares of the process's CPU
time; `CPU ms a step` multiplies them by the step's CPU time that `urpe bench step` printed.

  bench/cpu_breakdown.py [--model encoder|txl|graphormer] [--build build] [--steps 40] [--top 25]

Needs `perf` (linux-perf) and permission to sample (perf_event_paranoid ≤ 1, or root). Like the
other benchmarks it removes OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE from the command's environment.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_vs_torch import clean_env, shell  # noqa: E402

# (kind, regex on "dso symbol"), first match wins.
KINDS = [
    ("GEMM kernels (OpenBLAS sgemm microkernels)", r"sgemm_(small_)?kernel"),
    ("GEMM packing and C = 0 (OpenBLAS copies, beta, memset)", r"sgemm_\w*copy|sgemm_beta|memset"),
    ("URPE attention core (rows, slices, flash)", r"attention_rows::|urpe_attention_\w*_cpu|flash|merge_table_partials"),
    ("GELU / ReLU", r"activation_"),
    ("layer norm", r"layer_norm"),
    ("Adam", r"adam_update"),
    ("cross-entropy, softmax, L1", r"cross_entropy|softmax|l1_loss"),
    ("copies (permute, concat, slice, memmove)", r"permute|copy_window|memmove|memcpy|concat"),
    ("small elementwise and reductions (add, bias, sums, embedding)", r"binary_|broadcast_axis|sum_axis|reduce_repeats|affine|embedding|relative_shift|scale"),
    ("autograd and tensors (accumulate, allocation)", r"autograd|Tensor::|host::|malloc|_int_free|operator new|cfree"),
    ("OpenMP runtime (libgomp: waits, barriers)", r"libgomp"),
    ("Linux kernel (scheduling, page faults, syscalls)", r"\[kernel|kallsyms"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="encoder")
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--top", type=int, default=25, help="also list this many functions")
    ap.add_argument("extra", nargs="*", help="more options for `urpe bench step` (after --)")
    args = ap.parse_args()
    cmd = [os.path.join(args.build, "urpe"), "bench", "step", "--model", args.model, "--repeats", str(args.steps)]
    cmd += args.extra
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        rec = subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "4000", "-o", data, "--"] + cmd, cwd=ROOT,
                             env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if rec.returncode != 0:
            sys.exit(f"cpu_breakdown.py: perf record failed ({rec.returncode}):\n{rec.stderr[-2000:]}")
        rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,symbol", "--stdio"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = rec.stdout
    cpu_ms = re.search(r"CPU time per step: median ([0-9.]+) ms", out)
    wall_ms = re.search(r"median ([0-9.]+) ms per step", out)
    rows = []
    for line in rep.stdout.splitlines():
        m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*)$", line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(3).strip()))
    totals = {kind: 0.0 for kind, _ in KINDS}
    other = 0.0
    for share, dso, symbol in rows:
        text = f"{dso} {symbol}"
        kind = next((k for k, pattern in KINDS if re.search(pattern, text)), None)
        if kind:
            totals[kind] += share
        else:
            other += share
    step_cpu = float(cpu_ms.group(1)) if cpu_ms else None
    print(f"`{shell(cmd)}` under `perf record -e cpu-clock`: {next(l for l in out.splitlines() if l.startswith('urpe'))}")
    print(f"step: median {wall_ms.group(1) if wall_ms else '?'} ms wall, {step_cpu if step_cpu else '?'} ms CPU "
          f"(perf's sampling adds a little); load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| kind of work | share of CPU time | CPU ms a step |")
    print("|---|--:|--:|")
    for kind, _ in KINDS:
        ms = f"{step_cpu * totals[kind] / 100:.1f}" if step_cpu else "—"
        print(f"| {kind} | {totals[kind]:.1f}% | {ms} |")
    print(f"| other | {other:.1f}% | {f'{step_cpu * other / 100:.1f}' if step_cpu else '—'} |")
    if args.top:
        print()
        print(f"The {args.top} functions with the most samples:")
        print()
        print("| share | library | function |")
        print("|--:|---|---|")
        for share, dso, symbol in rows[: args.top]:
            print(f"| {share:.2f}% | {dso} | `{symbol[:90]}` |")


if __name__ == "__main__":
    main()
