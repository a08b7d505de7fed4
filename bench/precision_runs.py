#!/usr/bin/env python3
"""bf16 against fp32 in training (issue 36): the same tiny runs of each family in both precisions.

Why: a precision switch is only usable if a run in it learns what the FP32 run learns. This trains
each family's tiny preset (position identification, Transformer-XL, Graphormer, all with URPE) for
K seeds in fp32 and in bf16 with `urpe train`, then writes one record: the final validation metric
of every run, the mean bf16-vs-fp32 relative difference per family, and one SVG per family with the
validation curves of both precisions overlaid (fp32 solid, bf16 dashed, a colour per seed).
Standard library only (the record's pictures are hand-written SVG).

  bench/precision_runs.py --out DIR [--urpe build/urpe] [--seeds 3] [--families pi,txl,graphormer]
                          [--device cpu] [--set KEY=VALUE]...

Runs that already finished in DIR/runs (their results.json reports the steps config.txt asked for;
an interrupted run's does not) are reused, so an interrupted
call continues where it stopped. Every run of a call uses one copy of the binary, taken at the start
(a rebuild during the call cannot change it mid-way), and DIR/binary.txt records its SHA-256: a call
whose binary differs from the one that made DIR's runs is refused, so a record never mixes builds. Each run is `urpe train --preset P --set seed=S --set precision=X`.
"""
import argparse
import atexit
import csv
import hashlib
import shutil
import signal
import tempfile
import json
import math
import os
import platform
import subprocess
import sys
import time

FAMILIES = {
    # name: (preset, extra --set, metric label, lower is better)
    "pi": ("pi-tiny", [], "valid accuracy", False),
    "txl": ("txl-tiny", ["pe=urpe"], "valid perplexity", True),
    "graphormer": ("graphormer-tiny-urpe", [], "valid MAE", True),
}
PRECISIONS = ("fp32", "bf16")
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


def run_dir(out, family, precision, seed):
    return os.path.join(out, "runs", f"{family}-{precision}-s{seed}")


def finished(directory):
    """Whether a run completed: urpe writes results.json for an interrupted run too (its metric at
    the step it reached), so the steps there must be the steps config.txt asked for."""
    try:
        with open(os.path.join(directory, "results.json")) as f:
            done = json.load(f).get("steps")
        with open(os.path.join(directory, "config.txt")) as f:
            asked = next(int(line.split("=")[1].split("#")[0]) for line in f if line.split("=")[0].strip() == "steps")
    except (OSError, ValueError, StopIteration):
        return False
    return done == asked


def train(args, family, precision, seed):
    directory = run_dir(args.out, family, precision, seed)
    if finished(directory):
        return "reused"
    preset, extra, _, _ = FAMILIES[family]
    command = [args.urpe, "train", "--preset", preset, "--set", f"seed={seed}", "--set",
               f"precision={precision}", "--set", f"device={args.device}", "--out", directory, "--quiet"]
    if os.path.exists(directory):
        command.append("--overwrite")  # a run that stopped before the end: start it again
    for assignment in extra + args.set:
        command += ["--set", assignment]
    start = time.time()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"precision_runs: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return f"{time.time() - start:.0f} s"


def valid_curve(directory):
    """(steps, metric values) of the validation rows of a run's metrics.csv."""
    steps, values = [], []
    with open(os.path.join(directory, "metrics.csv")) as f:
        for row in csv.DictReader(f):
            if row["split"] == "valid":
                steps.append(int(row["step"]))
                values.append(float(row["metric"]))
    return steps, values


def final_metric(directory):
    with open(os.path.join(directory, "results.json")) as f:
        return float(json.load(f)["metric"])


def svg_chart(title, ylabel, curves, path, log_allowed):
    """curves: [(label, colour, dashed, steps, values)]; a plain line chart, axes from the data."""
    width, height, left, right, top, bottom = 640, 400, 70, 170, 40, 50
    xs = [x for c in curves for x in c[3]]
    ys = [y for c in curves for y in c[4]]
    x0, x1 = min(xs), max(xs)
    # A loss-like metric spanning more than 3× (perplexity falling from hundreds) on a log axis, so
    # that the end of the curves, where the precisions are compared, is not squashed into a few pixels.
    log = log_allowed and min(ys) > 0 and max(ys) / min(ys) > 3
    scale = math.log10 if log else (lambda v: v)
    y0, y1 = scale(min(ys)), scale(max(ys))
    if y1 == y0:
        y1 = y0 + 1
    pad = 0.05 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad

    def px(x):
        return left + (x - x0) / max(x1 - x0, 1) * (width - left - right)

    def py(y):
        return top + (y1 - scale(y)) / (y1 - y0) * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{width / 2 - 60}" y="20" font-size="14">{title}</text>',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>',
             f'<text x="{(left + width - right) / 2 - 15}" y="{height - 12}">step</text>',
             f'<text x="14" y="{(top + height - bottom) / 2}" transform="rotate(-90 14 '
             f'{(top + height - bottom) / 2})">{ylabel}{" (log scale)" if log else ""}</text>']
    for k in range(5):
        yv = y0 + (y1 - y0) * k / 4
        yv = 10 ** yv if log else yv
        xv = x0 + (x1 - x0) * k / 4
        parts.append(f'<text x="{left - 6}" y="{py(yv) + 4}" text-anchor="end">{yv:.4g}</text>')
        parts.append(f'<line x1="{left}" y1="{py(yv)}" x2="{width - right}" y2="{py(yv)}" stroke="#ddd"/>')
        parts.append(f'<text x="{px(xv)}" y="{height - bottom + 16}" text-anchor="middle">{xv:.0f}</text>')
    for i, (label, colour, dashed, steps, values) in enumerate(curves):
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(steps, values))
        dash = ' stroke-dasharray="6,4"' if dashed else ""
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        ly = top + 16 * i
        parts.append(f'<line x1="{width - right + 10}" y1="{ly}" x2="{width - right + 40}" y2="{ly}" '
                     f'stroke="{colour}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{width - right + 46}" y="{ly + 4}">{label}</text>')
    parts.append("</svg>")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(parts) + "\n")
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--urpe", default="build/urpe")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--families", default="pi,txl,graphormer")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    families = args.families.split(",")
    for family in families:
        if family not in FAMILIES:
            sys.exit(f"precision_runs: unknown family '{family}' (one of {', '.join(FAMILIES)})")
    if args.seeds < 1:
        sys.exit("precision_runs: --seeds must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    if not os.path.isfile(args.urpe):
        sys.exit(f"precision_runs: no urpe binary at {args.urpe} (build it, or pass --urpe)")
    with open(args.urpe, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    stamp = os.path.join(args.out, "binary.txt")
    if os.path.exists(stamp):
        with open(stamp) as f:
            made_by = f.read().split()[0]
        if made_by != digest:
            sys.exit(f"precision_runs: the runs in {args.out} were made by another urpe binary (sha256 {made_by[:12]}, "
                     f"this one {digest[:12]}); use a new --out, or remove {args.out} to start again")
    else:
        with open(stamp + ".tmp", "w") as f:
            f.write(f"{digest} {os.path.abspath(args.urpe)}\n")
        os.replace(stamp + ".tmp", stamp)
    private = tempfile.mkdtemp(prefix="precision_runs_")
    atexit.register(shutil.rmtree, private, True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill runs the clean-up above too
    args.urpe = shutil.copy2(args.urpe, os.path.join(private, "urpe"))  # the copy every run of this call uses
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [f"# bf16 against fp32 in training: {', '.join(families)}, {args.seeds} seeds",
             "",
             f"- `bench/precision_runs.py --seeds {args.seeds} --families {args.families} --device {args.device}`"
             + "".join(f" --set {s}" for s in args.set) + f", urpe at commit {commit or 'unknown'}"
             + f" (binary sha256 {digest[:12]}, one copy for every run)",
             f"- machine: {platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs), {time.strftime('%Y-%m-%d')}",
             "- each run: `urpe train --preset P --set seed=S --set precision=fp32|bf16`; the metric is the"
             " run's final validation metric (results.json); relative difference = (bf16 − fp32) / fp32",
             ""]
    for family in families:
        preset, extra, label, lower_better = FAMILIES[family]
        for seed in range(1, args.seeds + 1):
            for precision in PRECISIONS:
                took = train(args, family, precision, seed)
                print(f"{family} {precision} seed {seed}: {took}", flush=True)
        lines += [f"## {family} (`{preset}`" + "".join(f" --set {e}" for e in extra) + f"): {label}", "",
                  "| seed | fp32 | bf16 | relative difference |", "|--:|--:|--:|--:|"]
        differences, curves, finals_a, finals_b = [], [], [], []
        for seed in range(1, args.seeds + 1):
            a = final_metric(run_dir(args.out, family, "fp32", seed))
            b = final_metric(run_dir(args.out, family, "bf16", seed))
            finals_a.append(a)
            finals_b.append(b)
            difference = (b - a) / a if a != 0 else float("nan")
            differences.append(difference)
            lines.append(f"| {seed} | {a:.6g} | {b:.6g} | {100 * difference:+.2f}% |")
            colour = COLOURS[(seed - 1) % len(COLOURS)]
            for precision in PRECISIONS:
                steps, values = valid_curve(run_dir(args.out, family, precision, seed))
                curves.append((f"{precision} seed {seed}", colour, precision == "bf16", steps, values))
        mean_a, mean_b = sum(finals_a) / args.seeds, sum(finals_b) / args.seeds
        lines += [f"| mean | {mean_a:.6g} | {mean_b:.6g} | {100 * (mean_b - mean_a) / mean_a:+.2f}% |", "",
                  f"Largest per-seed difference: {100 * max(abs(d) for d in differences):.2f}%"
                  f" ({'lower' if lower_better else 'higher'} is better). Validation curves, fp32 solid,"
                  " bf16 dashed:", "", f"![{family}]({family}.svg)", ""]
        svg_chart(f"{family}: {label}, fp32 vs bf16", label, curves, os.path.join(args.out, f"{family}.svg"),
                  lower_better)
    record = os.path.join(args.out, "precision_runs.md")
    with open(record + ".tmp", "w") as f:
        f.write("\n".join(lines))
    os.replace(record + ".tmp", record)
    print(f"wrote {record}")


if __name__ == "__main__":
    main()
