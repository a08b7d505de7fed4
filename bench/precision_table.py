#!/usr/bin/env python3
"""Issue 36's table from `bench/gpu_session.sh precision`'s profiles: step time and memory by precision.

Why: the precision step leaves one `urpe profile` directory per run, precision and round
(LOGS/precision/NAME_PRECISION_ROUND/profile.md). This reads each profile's median step and its
memory lines and prints one markdown table, so a GPU call's log already holds the numbers a record
needs: per run the median step in fp32, tf32 and bf16 (the mean over rounds of each round's
median), the speed-ups fp32/bf16 and tf32/bf16 (per round, then their mean and range), and a step's
memory above what was live at its start (the activations, docs/profiling.md "Memory") with its
bf16/fp32 ratio. Standard library only.

  bench/precision_table.py DIR    (DIR: LOGS/precision, or a record folder of NAME_PRECISION_ROUND_profile.txt)
"""
import os
import re
import sys
from collections import defaultdict

PRECISIONS = ("fp32", "tf32", "bf16")
MEDIAN = re.compile(r"measured step \(mean; median ([0-9.]+)\)")
PEAK = re.compile(r"- peak tensor memory: ([0-9.]+) MiB")
STEP_MEMORY = re.compile(r"- a step's memory: ([0-9.]+) MiB live when it begins .* at most ([0-9.]+) MiB more")
NAME = re.compile(r"^(?P<run>.+)_(?P<precision>fp32|tf32|bf16)_(?P<round>[0-9]+)(?:_profile\.txt)?$")


def profiles(directory):
    """(run, precision, round, text) of every profile under directory."""
    for entry in sorted(os.listdir(directory)):
        match = NAME.match(entry)
        if not match:
            continue
        path = os.path.join(directory, entry)
        if os.path.isdir(path):
            path = os.path.join(path, "profile.md")
        if not os.path.isfile(path):
            continue  # a run that failed before writing its profile
        with open(path) as f:
            yield match["run"], match["precision"], int(match["round"]), f.read()


def mean(values):
    return sum(values) / len(values)


def cell(values, digits=2):
    """The mean, with the range when rounds differ."""
    if not values:
        return "—"
    if len(values) == 1 or min(values) == max(values):
        return f"{values[0]:.{digits}f}"
    return f"{mean(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    directory = sys.argv[1]
    if not os.path.isdir(directory):
        sys.exit(f"precision_table: no directory {directory}")
    # step[run][precision][round] = median ms; above[run][precision][round] = MiB above the step's start
    step = defaultdict(lambda: defaultdict(dict))
    above = defaultdict(lambda: defaultdict(dict))
    peak = defaultdict(lambda: defaultdict(dict))
    for run, precision, round_, text in profiles(directory):
        found = MEDIAN.search(text)
        if found:
            step[run][precision][round_] = float(found[1])
        found = STEP_MEMORY.search(text)
        if found:
            above[run][precision][round_] = float(found[2])
        found = PEAK.search(text)
        if found:
            peak[run][precision][round_] = float(found[1])
    if not step:
        sys.exit(f"precision_table: no NAME_PRECISION_ROUND profiles with a measured step under {directory}")

    rounds = sorted({r for run in step.values() for by_round in run.values() for r in by_round})
    print(f"Median step in ms (the mean over {len(rounds)} round(s); ranges over rounds in brackets), "
          "speed-ups per round; a step's memory above what was live at its start, and the run's peak tensor memory, "
          "in MiB.\n")
    print("| run | fp32 ms | tf32 ms | bf16 ms | fp32 / bf16 | tf32 / bf16 | step memory fp32 | step memory bf16 "
          "| bf16 / fp32 memory | peak fp32 | peak bf16 |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for run in sorted(step):
        times = step[run]

        def ratios(slow, fast, table=times):
            return [table[slow][r] / table[fast][r] for r in rounds
                    if r in table.get(slow, {}) and r in table.get(fast, {}) and table[fast][r] > 0]

        memory_ratio = ratios("bf16", "fp32", above[run])
        row = [run] + [cell(list(times[p].values())) for p in PRECISIONS]
        row += [cell(ratios("fp32", "bf16")), cell(ratios("tf32", "bf16"))]
        row += [cell(list(above[run][p].values()), 1) for p in ("fp32", "bf16")]
        row += [cell(memory_ratio, 3)]
        row += [cell(list(peak[run][p].values()), 1) for p in ("fp32", "bf16")]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
