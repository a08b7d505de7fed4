#!/usr/bin/env python3
"""Two urpe binaries' training step, alternating round by round: did a change make it faster?

Why: on a shared machine the load moves from minute to minute, so a "before" run and an "after"
run taken apart compare the load, not the code. This runs `urpe bench step` with the old binary
and the new one back to back in every round (the order swaps each round), and reports each
round's wall-clock and CPU-time ratios (new / old) and their medians. Like the other benchmarks it
removes OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE from the commands' environment and prints the GEMM
kernel each binary ran.

  bench/ab_step.py --before OLD_URPE --after NEW_URPE [--models encoder,txl,graphormer]
                   [--rounds 5] [--steps 20] [--out bench/results/FILE.md] [-- extra bench step args]

Prints markdown (and writes it to --out, through a temporary file).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_vs_torch import Report, load, number, run, shell  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the old urpe binary")
    ap.add_argument("--after", required=True, help="the new urpe binary")
    ap.add_argument("--before-name", default="before")
    ap.add_argument("--after-name", default="after")
    ap.add_argument("--models", default="encoder,txl,graphormer")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", default="")
    ap.add_argument("extra", nargs="*", help="more `urpe bench step` arguments (after --)")
    args = ap.parse_args()
    for path in (args.before, args.after):
        if not os.access(path, os.X_OK):
            ap.error(f"{path}: not an executable urpe binary")

    report = Report()
    emit = report.emit

    emit(f"# urpe bench step, {args.before_name} against {args.after_name}, "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    emit()
    emit(f"- machine: {next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')}, "
         f"{os.cpu_count()} cores; load average at the start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sides = [(args.before_name, args.before), (args.after_name, args.after)]
    for name, binary in sides:
        emit(f"- {name}: `{binary}`")
    for model in args.models.split(","):
        cmds = {name: [binary, "bench", "step", "--model", model, "--repeats", str(args.steps)] + args.extra
                for name, binary in sides}
        emit()
        emit(f"## {model}")
        emit()
        for name, _ in sides:
            emit(f"    {shell(cmds[name])}")
        emit()
        rows = []
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            before_load = load()
            wall, cpu = {}, {}
            for name, _ in order:
                out = run(cmds[name])
                if r == 0:
                    emit(f"- {name}: {out.splitlines()[0]}")
                    for line in out.splitlines():
                        if line.startswith(("bench config", "peak memory", "host allocator")) and (
                                name == args.after_name or not line.startswith("bench config")):
                            emit(f"- {name}: {line}")
                wall[name] = number(r"median ([0-9.]+) ms per step", out, f"{name} step time")
                cpu[name] = number(r"CPU time per step: median ([0-9.]+) ms", out, f"{name} CPU time")
            rows.append((r, [n for n, _ in order], before_load, load(), wall, cpu))
        a, b = args.before_name, args.after_name
        emit()
        emit(f"| round (order) | load before → after | {a} ms (CPU ms) | {b} ms (CPU ms) | {b} / {a} | "
             f"CPU time: {b} / {a} |")
        emit("|---|---|--:|--:|--:|--:|")
        for r, order, l0, l1, wall, cpu in rows:
            emit(f"| {r + 1} ({', '.join(order)}) | {l0:.2f} → {l1:.2f} | {wall[a]:.2f} ({cpu[a]:.1f}) | "
                 f"{wall[b]:.2f} ({cpu[b]:.1f}) | {wall[b] / wall[a]:.3f} | {cpu[b] / cpu[a]:.3f} |")
        med = lambda f: statistics.median(f(row) for row in rows)  # noqa: E731
        emit(f"| **median** | | **{med(lambda x: x[4][a]):.2f}** ({med(lambda x: x[5][a]):.1f}) | "
             f"**{med(lambda x: x[4][b]):.2f}** ({med(lambda x: x[5][b]):.1f}) | "
             f"**{med(lambda x: x[4][b] / x[4][a]):.3f}** | **{med(lambda x: x[5][b] / x[5][a]):.3f}** |")
    emit()
    emit(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report.save(args.out)


if __name__ == "__main__":
    main()
