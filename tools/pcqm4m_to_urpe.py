#!/usr/bin/env python3
"""Prepares OGB-LSC PCQM4M (v1, the paper's Table 3) or PCQM4Mv2 for urpe (docs/data.md#pcqm4m): the
labelled molecules and a split file.

    python3 tools/pcqm4m_to_urpe.py dataset/pcqm4m_kddcup2021 OUT [--test-fraction 0.01] [--seed 0]   # v1
    python3 tools/pcqm4m_to_urpe.py dataset/pcqm4m-v2 OUT                                               # v2

Input, the folder OGB's PCQM4MDataset (v1, the KDD Cup 2021 release the paper's Table 3 and the
official Graphormer code use: pcqm4m_kddcup2021) or PCQM4Mv2Dataset (pcqm4m-v2) downloads and
unzips: raw/data.csv.gz (idx,smiles,homolumogap in both; the rows of the test splits have no label)
and split_dict.pt (torch.save of a dict → row indices, as numpy arrays or torch tensors: train /
valid / test for v1, train / valid / test-dev / test-challenge for v2). The split names tell the
two apart; the tool says which it read.

Output (a new directory, or an existing one with --overwrite; files written to temporary names and
renamed):
    molecules.csv   idx,smiles,homolumogap for the labelled rows (OGB's train and valid), in row order
    split.csv       row,split for every row of molecules.csv:
                      valid  OGB's valid split (the paper's Table 3 reports this MAE)
                      train  OGB's train split, less the held-out rows below
                      test   a fixed random --test-fraction of OGB's train (seeded), since OGB keeps the
                             labels of its test splits hidden
Then: urpe train --set dataset=OUT/molecules.csv --set dataset_format=ogb --set target_column=homolumogap
--set split=OUT/split.csv (Graphormer reads OGB's 9 atom and 3 bond features, computed in C++).

Only the Python standard library is needed: split_dict.pt is read from its zip archive, numpy arrays
and torch tensors rebuilt here without numpy or torch.
"""
import argparse
import codecs
import csv
import gzip
import io
import math
import os
import pickle
import random
import struct
import sys
import zipfile

SPLITS_V2 = ("train", "valid", "test-dev", "test-challenge")  # PCQM4Mv2
SPLITS_V1 = ("train", "valid", "test")                         # PCQM4M (KDD Cup 2021), the paper's


class ConvertError(Exception):
    pass


# ---- split_dict.pt without torch or numpy ---------------------------------------------------------

TORCH_STORAGES = {"LongStorage": "q", "IntStorage": "i", "ShortStorage": "h", "ByteStorage": "B",
                  "CharStorage": "b", "BoolStorage": "?"}
NUMPY_CODES = {"i8": "q", "i4": "i", "i2": "h", "i1": "b", "u8": "Q", "u4": "I", "u2": "H", "u1": "B"}


class Indices(list):
    """A rebuilt 1-D integer array (numpy or torch)."""


class NumpyDtype:
    def __init__(self, name, *rest):
        if name not in NUMPY_CODES:
            raise ConvertError("a numpy array of dtype %r (expected integer row indices)" % name)
        self.code = NUMPY_CODES[name]
        self.order = "<"

    def __setstate__(self, state):  # (version, byte order, …)
        self.order = "<" if state[1] in ("<", "|", "=") else ">"


class NumpyArray(Indices):
    def __setstate__(self, state):  # (version, shape, dtype, is_fortran, raw bytes)
        _, shape, dtype, _, raw = state
        if len(shape) != 1:
            raise ConvertError("a numpy array of shape %s (expected one row index per element)" % (shape,))
        if isinstance(raw, list):  # an object array pickles its items
            raise ConvertError("a numpy object array (expected integer row indices)")
        self.extend(struct.unpack("%s%d%s" % (dtype.order, shape[0], dtype.code), raw))


def numpy_reconstruct(cls, shape, typecode):
    return NumpyArray()


class TorchStorageType:
    def __init__(self, name):
        self.code = TORCH_STORAGES[name]


def rebuild_tensor(storage, offset, size, stride, *rest):
    if len(size) != 1:
        raise ConvertError("a tensor of shape %s (expected one row index per element)" % (tuple(size),))
    return Indices(storage[offset + k * stride[0]] for k in range(size[0]))


def load_split_dict(path):
    """torch.save's zip format: <name>/data.pkl, with tensor storages in <name>/data/<key>."""
    if not os.path.isfile(path):
        raise ConvertError("%s: missing (expected OGB's split_dict.pt)" % path)
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        raise ConvertError("%s: not a torch.save zip archive (%s); the file may be truncated" % (path, e))
    with archive:
        names = archive.namelist()
        pkl = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pkl) != 1:
            raise ConvertError("%s: expected one data.pkl in the archive, found %d" % (path, len(pkl)))
        prefix = pkl[0][: -len("data.pkl")]

        class Unpickler(pickle.Unpickler):
            def find_class(self, module, name):
                allowed = {
                    ("torch._utils", "_rebuild_tensor_v2"): rebuild_tensor,
                    ("collections", "OrderedDict"): dict,
                    ("numpy.core.multiarray", "_reconstruct"): numpy_reconstruct,
                    ("numpy._core.multiarray", "_reconstruct"): numpy_reconstruct,
                    ("numpy", "ndarray"): NumpyArray,
                    ("numpy", "dtype"): NumpyDtype,
                    ("_codecs", "encode"): codecs.encode,  # protocol 2 writes bytes as latin-1 text
                }
                if (module, name) in allowed:
                    return allowed[(module, name)]
                if module == "torch" and name in TORCH_STORAGES:
                    return TorchStorageType(name)
                raise ConvertError("unexpected class %s.%s (expected a dict of index arrays)" % (module, name))

            def persistent_load(self, pid):
                # ('storage', storage class, key, location, numel)
                if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"
                        and isinstance(pid[1], TorchStorageType)):
                    raise ConvertError("unexpected persistent id %r" % (pid,))
                raw = archive.read(prefix + "data/" + str(pid[2]))
                count = len(raw) // struct.calcsize(pid[1].code)
                return list(struct.unpack("<%d%s" % (count, pid[1].code), raw[: count * struct.calcsize(pid[1].code)]))

        try:
            split = Unpickler(io.BytesIO(archive.read(pkl[0]))).load()
        except ConvertError as e:
            raise ConvertError("%s: %s" % (path, e))
        except (pickle.UnpicklingError, EOFError, struct.error, KeyError, ValueError, zipfile.BadZipFile) as e:
            raise ConvertError("%s: not a readable split dict (%s: %s)" % (path, type(e).__name__, e))
    return split_release(split, path)


def split_release(split, path):
    """The split dict's index arrays and its release: 1 (train, valid, test: PCQM4M, the paper's
    Table 3) or 2 (train, valid, test-dev, test-challenge: PCQM4Mv2)."""
    for splits in (SPLITS_V2, SPLITS_V1):
        if isinstance(split, dict) and all(isinstance(split.get(k), Indices) for k in splits):
            return {k: split[k] for k in splits}, (2 if splits is SPLITS_V2 else 1)
    keys = sorted(split) if isinstance(split, dict) else type(split).__name__
    raise ConvertError("%s: expected a dict with index arrays %s (v2) or %s (v1), got %s"
                       % (path, ", ".join(SPLITS_V2), ", ".join(SPLITS_V1), keys))


# ---- the conversion -------------------------------------------------------------------------------

def read_data(path):
    """raw/data.csv.gz: rows (smiles, label or None), checked line by line."""
    if not os.path.isfile(path):
        raise ConvertError("%s: missing (expected OGB's raw/data.csv.gz)" % path)
    rows = []
    try:
        with gzip.open(path, "rt", newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None or [h.strip() for h in header] != ["idx", "smiles", "homolumogap"]:
                raise ConvertError("%s line 1: expected the header idx,smiles,homolumogap, got %r" % (path, header))
            for line, fields in enumerate(reader, 2):
                if len(fields) != 3 or fields[0] != str(len(rows)) or not fields[1]:
                    raise ConvertError("%s line %d: expected idx %d, a SMILES and a label (or none), got %r"
                                       % (path, line, len(rows), fields))
                label = fields[2].strip()
                if label in ("", "nan", "NaN"):
                    value = None
                else:
                    try:
                        value = float(label)
                    except ValueError:
                        value = float("nan")
                    if not math.isfinite(value):
                        raise ConvertError("%s line %d: expected homolumogap to be a finite number or empty, got %r"
                                           % (path, line, label))
                rows.append((fields[1], value, line))
    except (OSError, EOFError, zipfile.BadZipFile) as e:  # gzip errors: BadGzipFile is an OSError
        raise ConvertError("%s: not a readable gzip CSV (%s); the file may be truncated" % (path, e))
    return rows


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def convert(src, out, test_fraction, seed, overwrite):
    if not os.path.isdir(src):
        raise ConvertError("%s: not a directory (expected OGB's pcqm4m_kddcup2021 or pcqm4m-v2 folder)" % src)
    if not 0 < test_fraction < 1:
        raise ConvertError("--test-fraction must be in (0, 1), got %r" % test_fraction)
    for name in ("molecules.csv", "split.csv"):
        if os.path.exists(os.path.join(out, name)) and not overwrite:
            raise ConvertError("%s exists; pass --overwrite to replace it" % os.path.join(out, name))
    data = read_data(os.path.join(src, "raw", "data.csv.gz"))
    split, version = load_split_dict(os.path.join(src, "split_dict.pt"))
    which = {}
    for name in split:
        for row in split[name]:
            if not 0 <= row < len(data):
                raise ConvertError("split_dict.pt: %s row %d is outside data.csv.gz's %d rows" % (name, row, len(data)))
            if row in which:
                raise ConvertError("split_dict.pt: row %d is in both %s and %s" % (row, which[row], name))
            which[row] = name
    for row, name in which.items():
        labelled = data[row][1] is not None
        if labelled != (name in ("train", "valid")):
            raise ConvertError("%s line %d: a %s row %s a label" % (
                os.path.join(src, "raw", "data.csv.gz"), data[row][2], name, "with" if labelled else "without"))
    train = sorted(r for r, n in which.items() if n == "train")
    held = set(random.Random(seed).sample(train, max(1, round(test_fraction * len(train)))))
    kept = sorted(r for r, n in which.items() if n in ("train", "valid"))
    molecules = io.StringIO()
    w = csv.writer(molecules, lineterminator="\n")
    w.writerow(["idx", "smiles", "homolumogap"])
    parts = ["row,split\n"]
    counts = {"train": 0, "valid": 0, "test": 0}
    for out_row, row in enumerate(kept):
        w.writerow([row, data[row][0], repr(data[row][1])])
        part = "valid" if which[row] == "valid" else "test" if row in held else "train"
        counts[part] += 1
        parts.append("%d,%s\n" % (out_row, part))
    os.makedirs(out, exist_ok=True)
    write_atomically(os.path.join(out, "split.csv"), "".join(parts))
    write_atomically(os.path.join(out, "molecules.csv"), molecules.getvalue())
    counts["version"] = version
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", help="OGB's pcqm4m_kddcup2021 (v1) or pcqm4m-v2 folder: raw/data.csv.gz, split_dict.pt")
    parser.add_argument("out", help="output directory for molecules.csv and split.csv")
    parser.add_argument("--test-fraction", type=float, default=0.01,
                        help="share of OGB's train held out as urpe's test split (default 0.01)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the held-out draw (default 0)")
    parser.add_argument("--overwrite", action="store_true", help="replace existing output files")
    args = parser.parse_args(argv)
    try:
        counts = convert(args.src, args.out, args.test_fraction, args.seed, args.overwrite)
    except ConvertError as e:
        print("pcqm4m_to_urpe: error: %s" % e, file=sys.stderr)
        return 1
    release = ("PCQM4M v1 (KDD Cup 2021), the paper's Table 3" if counts["version"] == 1
               else "PCQM4Mv2 (not the paper's Table 3, which is on v1)")
    print("read %s\nwrote %s/molecules.csv and split.csv: train %d, valid %d, test %d"
          % (release, args.out, counts["train"], counts["valid"], counts["test"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
