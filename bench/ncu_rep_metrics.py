#!/usr/bin/env python3
"""Reads the metric values out of an Nsight Compute report (.ncu-rep) without ncu.

Why: the GPU machine is lent for minutes, and this machine has no ncu to `--import` a report the
GPU call brought back; the text summary (`--page details`) leaves out most counters (the stall
reasons per issued instruction, bank conflicts per load and store, executed local loads).

The format, as far as this script needs it (seen in ncu 2025.x reports; not a documented API):
after the 4-byte magic "NVR\\0", a sequence of [uint32 little-endian length][protobuf message]
blocks. One block holds the metric names as a repeated string field; each profiled kernel is a
block with the kernel's name in field 6 and one field-13 entry per metric: field 1 the name's
index, field 2 the value (a sub-message whose one field is the number). Generic protobuf
decoding, no schema: if a later ncu changes the layout, this prints nothing rather than wrong
numbers (a name index that does not resolve is printed as the number).

  bench/ncu_rep_metrics.py REPORT.ncu-rep [REGEX]     (metrics whose name matches REGEX)
e.g. the stall reasons, in cycles per issued instruction:
  bench/ncu_rep_metrics.py tc_fwd.ncu-rep 'warps_issue_stalled_.*per_issue_active'
"""
import re
import struct
import sys


def varint(b, i):
    result, shift = 0, 0
    while True:
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return result, i


def parse(b):
    """One protobuf message as [(field, wire type, value)]; ValueError when b is not one."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError
        if wire == 0:
            value, i = varint(b, i)
        elif wire == 1:
            value = struct.unpack("<d", b[i:i + 8])[0]
            i += 8
        elif wire == 5:
            value = struct.unpack("<f", b[i:i + 4])[0]
            i += 4
        elif wire == 2:
            n, i = varint(b, i)
            if i + n > len(b):
                raise ValueError
            value = b[i:i + n]
            i += n
        else:
            raise ValueError
        out.append((field, wire, value))
    if i != len(b):
        raise ValueError
    return out


def blocks(data):
    if data[:4] != b"NVR\x00":
        raise SystemExit("not an Nsight Compute report (no NVR magic)")
    i, out = 4, []
    while i + 4 <= len(data):
        n = struct.unpack("<I", data[i:i + 4])[0]
        out.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return out


def number(message):
    """The value of a metric entry's field 2: its one scalar, else None."""
    try:
        fields = parse(message)
    except ValueError:
        return None
    scalars = [v for f, w, v in fields if w != 2]
    return scalars[0] if len(scalars) == 1 else None


def metrics(path):
    parsed = []
    for b in blocks(open(path, "rb").read()):
        try:
            parsed.append(parse(b))
        except ValueError:
            parsed.append(None)
    names = None
    for fields in parsed:
        for f, w, v in fields or []:
            if w != 2:
                continue
            try:
                sub = parse(v)
            except ValueError:
                continue
            strings = [x for ff, ww, x in sub if ww == 2]
            if len(strings) > 1000 and all(re.fullmatch(rb"[a-z0-9_.]+", s) for s in strings[:20]):
                names = [s.decode() for s in strings]
    for fields in parsed:
        if not fields or not any(f == 13 for f, w, v in fields):
            continue
        kernel = next((v.decode(errors="replace") for f, w, v in fields if f == 6 and w == 2), "?")
        values = {}
        for f, w, v in fields:
            if f != 13 or w != 2:
                continue
            entry = parse(v)
            index = next((x for ff, ww, x in entry if ff == 1 and ww == 0), None)
            raw = next((x for ff, ww, x in entry if ff == 2 and ww == 2), None)
            if index is None or raw is None:
                continue
            name = names[index] if names and index < len(names) else index
            values[name] = number(raw)
        yield kernel, values


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    pattern = re.compile(sys.argv[2] if len(sys.argv) > 2 else ".")
    for kernel, values in metrics(sys.argv[1]):
        print(f"== {kernel} ({len(values)} metrics)")
        for name, value in values.items():
            if pattern.search(str(name)):
                print(f"  {name} {value}")
