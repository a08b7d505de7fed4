#!/usr/bin/env python3
"""numpy reference for `urpe analyze`: the position/context decomposition from a hidden-state file.

Why: app/analysis/position_context.cpp computes every number of `urpe analyze` in C++ (Gram
eigenvalues, a hand-built DCT, its own loops). This script computes the same numbers a second,
independent way (numpy's SVD, vectorised means), so tests/test_analyze.cpp can compare urpe with
it on a committed fixture (CI has no guaranteed Python: the test reads the committed files), and
so anyone can check a real run.

  python3 tools/analyze_reference.py fixture [--out tests/fixtures]
        writes analyze_hidden.safetensors (a small planted + random hidden-state file) and
        analyze_reference.json (this script's numbers for it): the golden files of test_analyze
  python3 tools/analyze_reference.py compute HIDDEN.safetensors [--json OUT.json]
        the numbers for a file written by `urpe analyze --save-hidden` (OUT/hidden*.safetensors)
  python3 tools/analyze_reference.py check HIDDEN.safetensors ANALYSIS.json
        compares them with urpe's analysis.json of the same run; prints the largest relative
        differences and exits 1 when one is above 1e-6 (1e-6·σ₁ for singular values)

The hidden-state file (safetensors; read here by a 20-line reader, so numpy is the only need):
  layer<l>   F32 (C, T, d)  the states of layer l (0 = input to block 1, l = output of block l)
  topics     I32 (C,)       optional: a topic label per context
  metadata   "layers": "0,1,2", "baseline_seeds": "1,1001,2001" (the seed of each layer's
             Gaussian baseline), "topic_names": "Austen|Bible" (optional)

The numbers (docs in app/analysis/position_context.h): μ, pos_t, ctx_c, resid; the ANOVA
energies and shares; σ(P), stable rank, the rank holding 90% of Σσ², the relative norm
√C·σ₁(P)/σ₁(M); the Gram matrix G of the unit pos_t and E₁₀ of F G Fᵀ (F the orthonormal DCT-II,
only for T > 10); max/mean |cos(pos_t, ctx_c)| and the same for Gaussian vectors drawn exactly as
urpe draws them (std::mt19937_64 and Box–Muller, re-implemented below); the signed mean
cos(ctx_c, ctx_c') within and between topics. Everything in float64 from the file's float32.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

FIXTURE_HIDDEN = "analyze_hidden.safetensors"
FIXTURE_REFERENCE = "analyze_reference.json"


# ---- safetensors (8 bytes of header length, a JSON header, the data) ----

DTYPES = {"F32": np.float32, "I32": np.int32, "F64": np.float64, "I64": np.int64}


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    data = blob[8 + n:]
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = np.dtype(DTYPES[entry["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(entry["shape"])
    return tensors, metadata


def save_safetensors(path, tensors, metadata):
    names = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32"}
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    os.replace(tmp, path)


# ---- urpe's Gaussian baseline: std::mt19937_64 and the Box–Muller of position_context.cpp ----

MASK64 = (1 << 64) - 1


class MT19937_64:
    """The C++ standard's mt19937_64 (its 10000th output from seed 5489 is 9981545732273789042)."""

    def __init__(self, seed):
        self.mt = [seed & MASK64]
        for i in range(1, 312):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self.index = 312

    def _twist(self):
        mt = self.mt
        for i in range(312):
            x = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % 312] & 0x7FFFFFFF)
            xa = x >> 1
            if x & 1:
                xa ^= 0xB5026F5AA96619E9
            mt[i] = mt[(i + 156) % 312] ^ xa
        self.index = 0

    def __call__(self):
        if self.index >= 312:
            self._twist()
        x = self.mt[self.index]
        self.index += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        x ^= x >> 43
        return x & MASK64


def urpe_gaussian(count, seed):
    gen = MT19937_64(seed)
    out = np.zeros(count)
    for i in range(0, count, 2):
        u1 = ((gen() >> 11) + 1.0) / 9007199254740993.0
        u2 = (gen() >> 11) / 9007199254740992.0
        r = math.sqrt(-2 * math.log(u1))
        out[i] = r * math.cos(2 * math.pi * u2)
        if i + 1 < count:
            out[i + 1] = r * math.sin(2 * math.pi * u2)
    return out


# ---- the analysis ----

def abs_cos_stats(a, b):
    """max and mean |cos| between every row of a and every row of b (0 for a zero row)."""
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    dots = np.abs(a @ b.T)
    denom = np.outer(na, nb)
    cos = np.where(denom > 0, dots / np.where(denom > 0, denom, 1), 0.0)
    return float(cos.max()), float(cos.mean())


def dct2(n):
    k, i = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    f = np.sqrt(2.0 / n) * np.cos(np.pi * (i + 0.5) * k / n)
    f[0] /= np.sqrt(2.0)
    return f


def analyze_layer(h, topics, seed):
    """h: (C, T, d) float64. Returns a dict with analysis.json's keys (and the Gram matrix)."""
    C, T, d = h.shape
    mu = h.mean(axis=(0, 1))
    pos = h.mean(axis=0) - mu
    ctx = h.mean(axis=1) - mu
    resid = h - mu - pos[None, :, :] - ctx[:, None, :]
    m = (h - mu).reshape(C * T, d)
    total = float((m ** 2).sum())
    pos_e, ctx_e, resid_e = C * float((pos ** 2).sum()), T * float((ctx ** 2).sum()), float((resid ** 2).sum())
    safe_total = total if total > 0 else 1.0

    def sum_error(rows):
        norms = np.linalg.norm(rows, axis=1).sum()
        return float(np.linalg.norm(rows.sum(axis=0)) / norms) if norms > 0 else 0.0

    sv = np.linalg.svd(pos, compute_uv=False)
    sigma_m = float(np.linalg.svd(m, compute_uv=False)[0])
    energy = float((sv ** 2).sum())
    s1 = float(sv[0])
    cumulative = np.cumsum(sv ** 2)
    rank90 = int(np.searchsorted(cumulative, 0.9 * energy) + 1) if energy > 0 else 0

    norms = np.linalg.norm(pos, axis=1, keepdims=True)
    unit = np.where(norms > 0, pos / np.where(norms > 0, norms, 1), 0.0)
    gram = unit @ unit.T
    e10 = None
    if T > 10:
        f = dct2(T)
        hat2 = (f @ gram @ f.T) ** 2
        e10 = float(hat2[:10, :10].sum() / hat2.sum())

    inc_max, inc_mean = abs_cos_stats(pos, ctx)
    g_pos = urpe_gaussian(T * d, seed).reshape(T, d)
    g_ctx = urpe_gaussian(C * d, (seed + 0x9E3779B97F4A7C15) & MASK64).reshape(C, d)
    rnd_max, rnd_mean = abs_cos_stats(g_pos, g_ctx)

    within = between = None
    n_topics = 0
    pairs = []  # mean cos by the two contexts' topics, K × K row-major
    if topics is not None:
        n_topics = len(set(topics.tolist()))
        cn = np.linalg.norm(ctx, axis=1)
        denom = np.outer(cn, cn)
        cos = np.where(denom > 0, (ctx @ ctx.T) / np.where(denom > 0, denom, 1), 0.0)
        upper = np.triu(np.ones((C, C), dtype=bool), k=1)
        same = topics[:, None] == topics[None, :]
        if (upper & same).any():
            within = float(cos[upper & same].mean())
        if (upper & ~same).any():
            between = float(cos[upper & ~same].mean())
        k = int(topics.max()) + 1
        off = ~np.eye(C, dtype=bool)
        for a in range(k):
            for b in range(k):
                mask = (topics[:, None] == a) & (topics[None, :] == b) & off
                pairs.append(float(cos[mask].mean()) if mask.any() else None)

    return {
        "contexts": C, "positions": T, "dim": d, "total": total,
        "pos_energy": pos_e, "ctx_energy": ctx_e, "resid_energy": resid_e,
        "pos_share": pos_e / safe_total, "ctx_share": ctx_e / safe_total, "resid_share": resid_e / safe_total,
        "anova_error": abs(total - pos_e - ctx_e - resid_e) / safe_total,
        "pos_sum_error": sum_error(pos), "ctx_sum_error": sum_error(ctx),
        "sigma_m": sigma_m, "stable_rank": energy / s1 ** 2 if s1 > 0 else 0.0, "rank90": rank90,
        "relative_norm": math.sqrt(C) * s1 / sigma_m if sigma_m > 0 else 0.0, "e10": e10,
        "incoherence_max": inc_max, "incoherence_mean": inc_mean,
        "random_max": rnd_max, "random_mean": rnd_mean,
        "topic_within": within, "topic_between": between, "topics": n_topics, "topic_pairs": pairs,
        "singular_values": [float(s) for s in sv],
        "gram": [float(g) for g in gram.reshape(-1)],
    }


def analyze_file(path):
    tensors, meta = load_safetensors(path)
    layers = [int(x) for x in meta["layers"].split(",")]
    seeds = [int(x) for x in meta["baseline_seeds"].split(",")]
    if len(seeds) != len(layers):
        raise SystemExit("%s: %d baseline seeds for %d layers" % (path, len(seeds), len(layers)))
    topics = tensors["topics"].astype(np.int64) if "topics" in tensors else None
    out = []
    for layer, seed in zip(layers, seeds):
        row = {"layer": layer, "baseline_seed": seed}
        row.update(analyze_layer(tensors["layer%d" % layer].astype(np.float64), topics, seed))
        out.append(row)
    return {"source": os.path.basename(path), "layers": out}


# ---- the fixture ----

def make_fixture(out_dir):
    """Two layers of C = 9 contexts, T = 12 positions, d = 8: a planted one (positions on a circle
    plus a weaker second harmonic, three topic clusters orthogonal to it, noise) and a Gaussian one
    with a mean far from 0. Float32, a fixed numpy seed."""
    C, T, d = 9, 12, 8
    rng = np.random.default_rng(20261123)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))  # columns: an orthonormal basis
    theta = 2 * np.pi * np.arange(T) / T
    pos = 3 * (np.outer(np.cos(theta), q[:, 0]) + np.outer(np.sin(theta), q[:, 1])) \
        + 0.8 * np.outer(np.cos(2 * theta), q[:, 2])
    topics = np.arange(C) % 3
    ctx = 2 * q[:, 3 + topics].T + 0.3 * rng.standard_normal((C, 2)) @ q[:, 6:8].T
    planted = rng.standard_normal(d) + pos[None] + ctx[:, None] + 0.05 * rng.standard_normal((C, T, d))
    noise = 1.5 + rng.standard_normal((C, T, d))
    tensors = {"layer0": planted.astype(np.float32), "layer1": noise.astype(np.float32),
               "topics": topics.astype(np.int32)}
    meta = {"format": "urpe hidden states", "layers": "0,1", "baseline_seeds": "7,1007",
            "topic_names": "first|second|third", "source": "tools/analyze_reference.py fixture"}
    hidden = os.path.join(out_dir, FIXTURE_HIDDEN)
    save_safetensors(hidden, tensors, meta)
    reference = analyze_file(hidden)
    reference["tool"] = "tools/analyze_reference.py fixture (numpy %s)" % np.__version__
    write_json(os.path.join(out_dir, FIXTURE_REFERENCE), reference)
    print("wrote %s (%d bytes) and %s" % (hidden, os.path.getsize(hidden), FIXTURE_REFERENCE))


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


# ---- comparing with urpe's analysis.json ----

SCALARS = ["total", "pos_energy", "ctx_energy", "resid_energy", "pos_share", "ctx_share", "resid_share",
           "sigma_m", "stable_rank", "relative_norm", "e10", "incoherence_max", "incoherence_mean",
           "random_max", "random_mean", "topic_within", "topic_between"]


def check(hidden, analysis, tolerance=1e-6):
    ours = analyze_file(hidden)["layers"]
    with open(analysis) as f:
        runs = json.load(f)["runs"]
    if len(runs) > 1:  # --compare: the run the hidden-state file names
        name = load_safetensors(hidden)[1].get("run")
        runs = [r for r in runs if r["run"] == name]
    if len(runs) != 1:
        raise SystemExit("%s: no single run matches %s" % (analysis, hidden))
    theirs = {row["layer"]: row for row in runs[0]["layers"]}
    worst, bad = {}, []
    for row in ours:
        other = theirs.get(row["layer"])
        if other is None:
            raise SystemExit("%s has no layer %d" % (analysis, row["layer"]))
        for key in SCALARS:
            a, b = row[key], other[key]
            if a is None or b is None:
                if (a is None) != (b is None):
                    bad.append("layer %d %s: %s vs %s" % (row["layer"], key, a, b))
                continue
            diff = abs(a - b) / max(abs(a), 1e-300)
            worst[key] = max(worst.get(key, 0.0), diff)
            if diff > tolerance:
                bad.append("layer %d %s: numpy %.17g, urpe %.17g" % (row["layer"], key, a, b))
        if row["rank90"] != other["rank90"]:
            bad.append("layer %d rank90: numpy %d, urpe %d" % (row["layer"], row["rank90"], other["rank90"]))
        for a, b in zip(row["topic_pairs"], other.get("topic_pairs", [])):
            if a is not None and b is not None:
                worst["topic_pairs"] = max(worst.get("topic_pairs", 0.0), abs(a - b) / max(abs(a), 1e-300))
                if abs(a - b) > tolerance * max(abs(a), 1e-300):
                    bad.append("layer %d topic_pairs: numpy %.17g, urpe %.17g" % (row["layer"], a, b))
        s1 = row["singular_values"][0]
        diff = max(abs(x - y) for x, y in zip(row["singular_values"], other["singular_values"])) / s1
        worst["singular_values (/s1)"] = max(worst.get("singular_values (/s1)", 0.0), diff)
        if diff > tolerance:
            bad.append("layer %d singular values differ by %.3g s1" % (row["layer"], diff))
    print("%d layers; largest relative difference per number:" % len(ours))
    for key, v in worst.items():
        print("  %-22s %.2e" % (key, v))
    for line in bad:
        print("MISMATCH " + line)
    return 1 if bad else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("fixture", help="rewrite the golden files of test_analyze")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                 "tests", "fixtures"))
    p = sub.add_parser("compute", help="the numbers for a hidden-state file")
    p.add_argument("hidden")
    p.add_argument("--json", help="write them here (default: print)")
    p = sub.add_parser("check", help="compare with urpe's analysis.json")
    p.add_argument("hidden")
    p.add_argument("analysis")
    args = parser.parse_args()
    if args.command == "fixture":
        make_fixture(args.out)
    elif args.command == "compute":
        doc = analyze_file(args.hidden)
        if args.json:
            write_json(args.json, doc)
        else:
            json.dump(doc, sys.stdout, indent=1)
            print()
    else:
        return check(args.hidden, args.analysis)
    return 0


if __name__ == "__main__":
    sys.exit(main())
