#!/usr/bin/env python3
"""urpe's fused URPE attention against PyTorch 2's CPU scaled_dot_product_attention, alternating.

Why: at long sequences the attention is the step; the fairest PyTorch yardstick is its own fused
CPU kernel (flash attention, `scaled_dot_product_attention`), which computes less than URPE
attention does (no C after the softmax; `sdpa` has no positional term at all, `sdpa+bias` adds B
as a float mask). Each round runs `urpe bench attention --attention fused` and
bench/torch_attention.py once each, the order alternating, on the same shapes (batch, 4 heads of
32, n = 1024 and 4096 by default), forward and forward + backward; the ratios are taken within a
round and their medians over the rounds are the result. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are
removed from both commands' environments, as in bench/cpu_vs_torch.py.

  bench/cpu_attention_vs_torch.py [--lengths 1024,4096] [--batch 4] [--rounds 5] [--repeats 3]
                                  [--build build] [--torch2 /work/venv-torch2/bin/python] [--out FILE]
"""
import argparse
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_vs_torch import Report, load, run, shell  # noqa: E402



def rows(text):
    """{(n, path, direction): median ms} from either program's table."""
    out = {}
    for m in re.finditer(r"^(\d+)\s+(\S+)\s+(forward\+backward|forward)\s+([0-9.]+)", text, re.M):
        out[(int(m.group(1)), m.group(2), m.group(3))] = float(m.group(4))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="1024,4096")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default="build")
    ap.add_argument("--torch2", default="/work/venv-torch2/bin/python")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    urpe_cmd = [os.path.join(args.build, "urpe"), "bench", "attention", "--attention", "fused", "--lengths",
                args.lengths, "--batch", str(args.batch), "--repeats", str(args.repeats)]
    torch_cmd = [args.torch2, "bench/torch_attention.py", "--device", "cpu", "--paths", "sdpa,sdpa+bias", "--lengths",
                 args.lengths, "--batch", str(args.batch), "--repeats", str(args.repeats)]
    report = Report()
    emit = report.emit

    emit(f"# URPE attention (urpe, fused) against PyTorch 2's CPU scaled_dot_product_attention, "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    emit()
    emit(f"- load average at the start {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    emit(f"- `{shell(urpe_cmd)}`")
    emit(f"- `{shell(torch_cmd)}`")
    emit("- the median of each program's timed runs per row; ratios within a round")
    lengths = [int(x) for x in args.lengths.split(",")]
    per_round = []
    for r in range(args.rounds):
        before = load()
        order = [("urpe", urpe_cmd), ("torch", torch_cmd)]
        if r % 2:
            order.reverse()
        outputs = {name: run(cmd) for name, cmd in order}
        if r == 0:
            emit(f"- urpe: {outputs['urpe'].splitlines()[0]}")
            emit(f"- PyTorch: {outputs['torch'].splitlines()[0]}")
            emit()
            emit("| round | load before → after | n | direction | urpe fused ms | sdpa ms | sdpa+bias ms | urpe / sdpa | urpe / sdpa+bias |")
            emit("|---|---|--:|---|--:|--:|--:|--:|--:|")
        after = load()
        u, t = rows(outputs["urpe"]), rows(outputs["torch"])
        entry = {}
        for n in lengths:
            for direction in ("forward", "forward+backward"):
                a, s, sb = u[(n, "fused", direction)], t[(n, "sdpa", direction)], t[(n, "sdpa+bias", direction)]
                entry[(n, direction)] = (a, s, sb)
                emit(f"| {r + 1} ({order[0][0]} first) | {before:.2f} → {after:.2f} | {n} | {direction} | {a:.2f} | "
                     f"{s:.2f} | {sb:.2f} | {a / s:.2f} | {a / sb:.2f} |")
        per_round.append(entry)
    emit()
    emit("| n | direction | urpe fused ms | sdpa ms | sdpa+bias ms | urpe / sdpa | urpe / sdpa+bias |")
    emit("|--:|---|--:|--:|--:|--:|--:|")
    for n in lengths:
        for direction in ("forward", "forward+backward"):
            vals = [e[(n, direction)] for e in per_round]
            med = [statistics.median(v[i] for v in vals) for i in range(3)]
            emit(f"| {n} | {direction} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.2f} | "
                 f"**{statistics.median(v[0] / v[1] for v in vals):.2f}** | "
                 f"**{statistics.median(v[0] / v[2] for v in vals):.2f}** |")
    emit()
    emit(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report.save(args.out)


if __name__ == "__main__":
    main()
