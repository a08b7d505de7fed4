#!/usr/bin/env python3
"""Converts the benchmarking-GNNs ZINC files (the layout PyG's ZINC dataset reads) into urpe's
plain molecule-graph file (docs/data.md#zinc-benchmarking-gnns-layout).

    python3 tools/zinc_to_urpe.py SRC OUT --subset    # the 12K benchmark (10,000 / 1,000 / 1,000)
    python3 tools/zinc_to_urpe.py SRC OUT --full      # all 249,456 graphs (220,011 / 24,445 / 5,000)

SRC is the unzipped `molecules/` folder of benchmarking-GNNs (PyG keeps the same files as
`ZINC/raw/`, or `ZINC/subset/raw/`): train.pickle, val.pickle, test.pickle (lists of dicts with
torch tensors: num_atom, atom_type (N,), bond_type (N, N), logP_SA_cycle_normalized), atom_dict.pickle,
bond_dict.pickle and, for --subset, train.index, val.index, test.index (one line of comma-separated
row numbers into the pickle of the same split).

OUT (a new directory, or an existing one with --overwrite) receives
    graphs.tsv       one graph per line: split, source index, target, atom type ids, bonds
    atom_types.txt   the atom vocabulary of atom_dict.pickle, line k = type id k (ZINC: 28 types)
written to temporary names and renamed, so an interrupted run leaves no half file.

Only the Python standard library is needed: the pickles hold torch tensors, which are rebuilt here
from torch's own serialisation (the legacy format torch.save uses for a storage inside a pickle)
without importing torch. Any other content is refused with the file named.
"""
import argparse
import collections
import io
import math
import os
import pickle
import struct
import sys

FORMAT_LINE = "# urpe-graphs 1"
SPLITS = (("train", "train"), ("val", "valid"), ("test", "test"))  # benchmark name, urpe name
BOND_NAMES = ["NONE", "SINGLE", "DOUBLE", "TRIPLE"]  # the benchmark's bond_dict; urpe ids 1..3


class ConvertError(Exception):
    pass


# ---- torch tensors without torch ----------------------------------------------------------------

# Storage classes of the legacy format: struct code and element size.
STORAGE_TYPES = {
    "LongStorage": "q", "IntStorage": "i", "ShortStorage": "h", "CharStorage": "b", "ByteStorage": "B",
    "BoolStorage": "?", "DoubleStorage": "d", "FloatStorage": "f", "HalfStorage": "e",
}


class Array:
    """A rebuilt tensor: a shape and its values in row-major order."""

    def __init__(self, shape, values):
        self.shape = tuple(shape)
        self.values = values

    def numel(self):
        return math.prod(self.shape)


class StorageType:
    def __init__(self, name):
        self.code = STORAGE_TYPES[name]


def load_legacy_storage(data):
    """torch.storage._load_from_bytes: magic, protocol, sys info, the storage pickle, the key list,
    then per key an int64 element count and the raw little-endian elements."""
    if data[:2] == b"PK":
        raise ConvertError("a storage in the zip format (torch.save of torch >= 1.6 with the new format); "
                           "the benchmark's pickles use the legacy format")
    stream = io.BytesIO(data)
    magic = pickle.load(stream)
    protocol = pickle.load(stream)
    sys_info = pickle.load(stream)
    if magic != 0x1950A86A20F9469CFC6C or protocol != 1001:
        raise ConvertError("a storage that is not torch's legacy serialisation (magic %r, protocol %r)" % (magic, protocol))
    if not sys_info.get("little_endian", False):
        raise ConvertError("a big-endian torch storage")
    found = {}

    class StorageUnpickler(pickle.Unpickler):
        def find_class(self, module, name):
            if module == "torch" and name in STORAGE_TYPES:
                return StorageType(name)
            raise ConvertError("unexpected class %s.%s inside a torch storage" % (module, name))

        def persistent_load(self, pid):
            # ('storage', storage class, key, location, numel, view metadata)
            if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"
                    and isinstance(pid[1], StorageType)):
                raise ConvertError("unexpected persistent id %r in a torch storage" % (pid,))
            found[pid[2]] = pid[1]
            view = pid[5] if len(pid) > 5 else None  # (view key, offset, size) of a storage view
            return (pid[2], 0, None) if view is None else (pid[2], view[1], view[2])

    key, view_offset, view_size = StorageUnpickler(stream).load()
    keys = pickle.load(stream)
    values = {}
    for k in keys:
        (count,) = struct.unpack("<q", stream.read(8))
        code = found[k].code
        size = struct.calcsize(code)
        raw = stream.read(count * size)
        if len(raw) != count * size:
            raise ConvertError("a torch storage cut short (%d of %d bytes)" % (len(raw), count * size))
        values[k] = list(struct.unpack("<%d%s" % (count, code), raw))
    if key not in values:
        raise ConvertError("a torch storage whose data is missing")
    data = values[key]
    return data if view_size is None else data[view_offset:view_offset + view_size]


def rebuild_tensor(storage, offset, size, stride, *rest):
    """torch._utils._rebuild_tensor(_v2): a strided view of the storage, copied out row-major."""
    shape = tuple(size)
    n = math.prod(shape)
    values = [0] * n
    index = [0] * len(shape)
    for flat in range(n):
        position = offset + sum(i * s for i, s in zip(index, stride))
        values[flat] = storage[position]
        for axis in range(len(shape) - 1, -1, -1):  # next index, last axis fastest
            index[axis] += 1
            if index[axis] < shape[axis]:
                break
            index[axis] = 0
    return Array(shape, values)


def rebuild_from_type(func, new_type, args, state):
    return func(*args)


class Dictionary:
    """benchmarking-GNNs' vocabulary class (word2idx, idx2word and occurrence counts)."""


class BenchmarkUnpickler(pickle.Unpickler):
    ALLOWED = {
        ("torch._utils", "_rebuild_tensor_v2"): rebuild_tensor,
        ("torch._utils", "_rebuild_tensor"): rebuild_tensor,
        ("torch._tensor", "_rebuild_from_type_v2"): rebuild_from_type,
        ("torch.storage", "_load_from_bytes"): load_legacy_storage,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("__main__", "Dictionary"): Dictionary,
    }

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return self.ALLOWED[(module, name)]
        raise ConvertError("unexpected class %s.%s (expected lists of dicts of torch tensors)" % (module, name))


def load_pickle(path):
    if not os.path.isfile(path):
        raise ConvertError("%s: missing (expected the benchmarking-GNNs ZINC file %s)" % (path, os.path.basename(path)))
    try:
        with open(path, "rb") as f:
            return BenchmarkUnpickler(f).load()
    except ConvertError as e:
        raise ConvertError("%s: %s" % (path, e))
    except (pickle.UnpicklingError, EOFError, struct.error, ValueError, KeyError, TypeError) as e:
        raise ConvertError("%s: not a readable pickle (%s: %s); the file may be truncated" % (path, type(e).__name__, e))


# ---- the benchmark's files ----------------------------------------------------------------------

def read_vocabulary(path, what):
    d = load_pickle(path)
    words = getattr(d, "idx2word", None)
    if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
        raise ConvertError("%s: expected a Dictionary with an idx2word list of strings (%s)" % (path, what))
    return words


def read_index(path, num_rows):
    """{split}.index: one line of comma-separated row numbers (the files end in CR LF)."""
    if not os.path.isfile(path):
        raise ConvertError("%s: missing (--subset needs the benchmark's split index files)" % path)
    with open(path) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    if len(lines) != 1:
        raise ConvertError("%s: expected one line of comma-separated row numbers, found %d lines" % (path, len(lines)))
    rows = []
    for column, item in enumerate(lines[0].split(","), 1):
        item = item.strip()
        if not item.isdigit() or int(item) >= num_rows:
            raise ConvertError("%s line 1, item %d: expected a row number below %d (the pickle's size), got %r"
                               % (path, column, num_rows, item))
        rows.append(int(item))
    if len(set(rows)) != len(rows):
        raise ConvertError("%s line 1: a row number appears twice" % path)
    return rows


def as_int(value, what):
    if isinstance(value, Array):
        if value.numel() != 1:
            raise ConvertError("expected %s to be one number, got a tensor of shape %s" % (what, value.shape))
        value = value.values[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConvertError("expected %s to be an integer, got %r" % (what, value))
    return value


def graph_line(split, index, molecule, num_atom_types, where):
    """One graphs.tsv line, every field checked; errors say which molecule of which file."""
    def fail(message):
        raise ConvertError("%s, molecule %d: %s" % (where, index, message))

    if not isinstance(molecule, dict):
        fail("expected a dict, got %s" % type(molecule).__name__)
    for key in ("num_atom", "atom_type", "bond_type", "logP_SA_cycle_normalized"):
        if key not in molecule:
            fail("missing key %r (keys: %s)" % (key, ", ".join(sorted(map(str, molecule)))))
    try:
        n = as_int(molecule["num_atom"], "num_atom")
    except ConvertError as e:
        fail(str(e))
    atoms, bonds, target = molecule["atom_type"], molecule["bond_type"], molecule["logP_SA_cycle_normalized"]
    if not isinstance(atoms, Array) or atoms.shape != (n,):
        fail("expected atom_type of shape (%d,), got %s" % (n, getattr(atoms, "shape", type(atoms).__name__)))
    if not isinstance(bonds, Array) or bonds.shape != (n, n):
        fail("expected bond_type of shape (%d, %d), got %s" % (n, n, getattr(bonds, "shape", type(bonds).__name__)))
    if n < 1:
        fail("expected at least one atom")
    for k, t in enumerate(atoms.values):
        if not isinstance(t, int) or not 0 <= t < num_atom_types:
            fail("atom %d has type %r, expected an id in [0, %d) (atom_dict.pickle)" % (k, t, num_atom_types))
    values = target.values if isinstance(target, Array) else [target]
    if len(values) != 1 or not isinstance(values[0], (int, float)) or not math.isfinite(values[0]) \
            or abs(values[0]) > 3.4e38:
        fail("expected logP_SA_cycle_normalized to be one finite number, got %r" % (values,))
    edges = []
    for i in range(n):
        if bonds.values[i * n + i] != 0:
            fail("bond_type[%d][%d] = %r: an atom bonded to itself" % (i, i, bonds.values[i * n + i]))
        for j in range(i + 1, n):
            b = bonds.values[i * n + j]
            if b != bonds.values[j * n + i]:
                fail("bond_type is not symmetric at (%d, %d): %r vs %r" % (i, j, b, bonds.values[j * n + i]))
            if not isinstance(b, int) or not 0 <= b < len(BOND_NAMES):
                fail("bond_type[%d][%d] = %r, expected 0 (none), 1, 2 or 3" % (i, j, b))
            if b:
                edges.append("%d-%d-%d" % (i, j, b))
    return "%s\t%d\t%r\t%s\t%s\n" % (split, index, float(values[0]), " ".join(map(str, atoms.values)), " ".join(edges))


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def convert(src, out, subset, overwrite):
    if not os.path.isdir(src):
        raise ConvertError("%s: not a directory (expected the benchmark's molecules/ folder)" % src)
    if os.path.exists(os.path.join(out, "graphs.tsv")) and not overwrite:
        raise ConvertError("%s/graphs.tsv exists; pass --overwrite to replace it" % out)
    atom_types = read_vocabulary(os.path.join(src, "atom_dict.pickle"), "atom types")
    bond_names = read_vocabulary(os.path.join(src, "bond_dict.pickle"), "bond types")
    if bond_names != BOND_NAMES:
        raise ConvertError("%s: expected the bond types %s (ids 0..3), got %s"
                           % (os.path.join(src, "bond_dict.pickle"), BOND_NAMES, bond_names))
    lines, counts = [], []
    for name, urpe_name in SPLITS:
        pickle_path = os.path.join(src, name + ".pickle")
        molecules = load_pickle(pickle_path)
        if not isinstance(molecules, list):
            raise ConvertError("%s: expected a list of molecules, got %s" % (pickle_path, type(molecules).__name__))
        rows = read_index(os.path.join(src, name + ".index"), len(molecules)) if subset else range(len(molecules))
        for index in rows:
            lines.append(graph_line(urpe_name, index, molecules[index], len(atom_types), pickle_path))
        counts.append("%s %d" % (urpe_name, len(rows)))
    header = [
        FORMAT_LINE + "\n",
        "# source: benchmarking-GNNs ZINC %s (%s), target logP_SA_cycle_normalized\n"
        % ("subset (the .index rows)" if subset else "full", os.path.abspath(src)),
        "# atom types: %d (atom_types.txt); bond types: 1 single, 2 double, 3 triple\n" % len(atom_types),
        "# splits: %s\n" % ", ".join(counts),
        "# graphs: %d\n" % len(lines),
        "split\tindex\ttarget\tatoms\tbonds\n",
    ]
    os.makedirs(out, exist_ok=True)
    write_atomically(os.path.join(out, "atom_types.txt"), "".join(t + "\n" for t in atom_types))
    write_atomically(os.path.join(out, "graphs.tsv"), "".join(header + lines))
    return len(lines), counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", help="the benchmark's molecules/ folder (PyG: ZINC/raw)")
    parser.add_argument("out", help="output directory for graphs.tsv and atom_types.txt")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--subset", action="store_true", help="the 12K benchmark subset (the .index files)")
    which.add_argument("--full", action="store_true", help="every graph of the pickles (ZINC-full)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT/graphs.tsv")
    args = parser.parse_args(argv)
    try:
        total, counts = convert(args.src, args.out, args.subset, args.overwrite)
    except ConvertError as e:
        print("zinc_to_urpe: error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %d graphs (%s) to %s/graphs.tsv" % (total, ", ".join(counts), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
