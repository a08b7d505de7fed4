#!/usr/bin/env python3
"""Where a step's time outside every op goes: the gaps between ops in a `urpe profile` trace.

    python3 bench/profile_gaps.py DIR/trace.json [--top 15]

`urpe profile` reports one number for the time outside every op (host bookkeeping, data, launch
gaps; on a GPU, the time the stream is idle). This script finds where in the step that time
lies. It takes the ops' intervals (on a GPU run the "cuda stream" track, the ops' times on the
stream; on a CPU run the ops' host spans), merges the nested and overlapping ones, and charges
each gap between two merged intervals to the pair of ops around it ("op before -> op after"),
the first gap to "step start" and the last to "step end". Printed: each pair's milliseconds per
recorded step, its share of the step and how often it occurs per step, largest first, and the
total, which is the profile.md row "outside every op" (up to rounding).

Reading it: a gap before the first op is the step's host work before the model starts (on a
Graphormer run, the batch's collation); a gap between two given ops is host work the code does
between them (a host loop, an upload, a sync, freeing memory); many small gaps between ops are
the per-op cost of launching and of autograd's bookkeeping.
"""
import argparse
import collections
import json
import sys


def op_intervals(events):
    """(start, end, name) of every op: the CUDA stream's when present, else the host's."""
    stream = [(e["ts"], e["ts"] + e.get("dur", 0.0), e["name"]) for e in events if e.get("ph") == "X" and e.get("cat") == "cuda"]
    if stream:
        return stream, "the CUDA stream (GPU idle)"
    spans, open_ops = [], collections.defaultdict(list)
    for e in events:
        if e.get("cat") != "op":
            continue
        if e["ph"] == "B":
            open_ops[e["tid"]].append(e)
        elif e["ph"] == "E" and open_ops[e["tid"]]:
            begin = open_ops[e["tid"]].pop()
            spans.append((begin["ts"], e["ts"], begin["name"]))
    return spans, "the host (outside every op)"


def step_spans(events):
    """(start, end) of every recorded step (its spans are repeated on each phase's track)."""
    begins, ends = {}, {}
    for e in events:
        if e.get("cat") == "step":
            (begins if e["ph"] == "B" else ends).setdefault(e["name"], e["ts"])
    return sorted((begins[n], ends[n]) for n in begins if n in ends)


def gaps(intervals, steps):
    """{(before, after): total µs} and {(before, after): count}, summed over the steps."""
    total, count = collections.Counter(), collections.Counter()
    intervals = sorted(intervals)
    for start, end in steps:
        inside = [iv for iv in intervals if start <= iv[0] < end]
        reach, before = start, "step start"
        for begin, finish, name in inside:
            if begin > reach:
                total[(before, name)] += begin - reach
                count[(before, name)] += 1
            if finish >= reach:
                reach, before = finish, name
        if end > reach:
            total[(before, "step end")] += end - reach
            count[(before, "step end")] += 1
    return total, count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="trace.json written by urpe profile")
    parser.add_argument("--top", type=int, default=15, help="pairs to print (default 15)")
    args = parser.parse_args()
    with open(args.trace) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    steps = step_spans(events)
    if not steps:
        sys.exit(f"{args.trace}: no recorded step")
    intervals, where = op_intervals(events)
    total, count = gaps(intervals, steps)
    n = len(steps)
    step_ms = sum(end - start for start, end in steps) / n / 1000
    outside = sum(total.values()) / n / 1000
    device = trace.get("otherData", {}).get("device", "?")
    print(f"{args.trace}: {n} steps on {device}, {step_ms:.3f} ms a step; gaps on {where}: "
          f"{outside:.3f} ms a step ({100 * outside / step_ms:.1f}%)")
    print()
    print("| ms per step | % of step | per step | between |")
    print("|--:|--:|--:|---|")
    for (before, after), us in total.most_common(args.top):
        ms = us / n / 1000
        print(f"| {ms:.3f} | {100 * ms / step_ms:.1f} | {count[(before, after)] / n:g} | {before} → {after} |")
    rest = sum(us for _, us in total.most_common()[args.top:]) / n / 1000
    if rest > 0:
        print(f"| {rest:.3f} | {100 * rest / step_ms:.1f} | | the other {len(total) - args.top} pairs |")


if __name__ == "__main__":
    main()
