#!/usr/bin/env python3
"""Writes tests/fixtures/zinc_bgnn/: a small ZINC folder in the benchmarking-GNNs layout, made the
way that layout is made (pickle.dump of lists of dicts of torch tensors, the vocabularies as
pickled `__main__.Dictionary` objects, .index files of one comma-separated line ending in CR LF),
for the converter's test (tests/test_real_data.cpp). Needs torch and RDKit:

    python3 -m venv /tmp/v && /tmp/v/bin/pip install torch rdkit
    /tmp/v/bin/python tools/make_zinc_fixture.py

The molecules are rows of the embedded set (data/assets/molecules, RDKit Kekulé SMILES within
ZINC's 28 atom types), read with RDKit as written (no sanitisation, so the bonds are the SMILES'
own single/double/triple bonds and the atom order is the SMILES' order); the target is the row's
penalized_logp_normalized, the scale of logP_SA_cycle_normalized. The smallest molecule of
every atom type the embedded set has comes first (so the fixture covers them), then the smallest
others. A manifest,
fixture_source.csv (split,index,row,smiles; not part of the benchmark's layout), says which
embedded row each pickled molecule is, so the test can rebuild it from the SMILES.
"""
import csv
import gzip
import io
import os
import pickle
import sys

import torch
from rdkit import Chem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "zinc_bgnn")
SIZES = {"train": 16, "val": 6, "test": 6}        # molecules per pickle
SUBSET = {"train": [13, 2, 7, 0, 11, 5, 9, 15], "val": [4, 1, 3], "test": [5, 0, 2]}  # the .index rows
ZINC_TYPES = ["C", "O", "N", "F", "C H1", "S", "Cl", "O -", "N H1 +", "Br", "N H3 +", "N H2 +", "N +",
              "N -", "S -", "I", "P", "O H1 +", "N H1 -", "O +", "S +", "P H1", "P H2", "C H2 -", "P +",
              "S H1 +", "C H1 -", "P H1 +"]
BONDS = {Chem.BondType.SINGLE: 1, Chem.BondType.DOUBLE: 2, Chem.BondType.TRIPLE: 3}


class Dictionary:  # pickled as __main__.Dictionary, like the benchmark's vocabularies
    def __init__(self, words, counts):
        self.word2idx = {w: k for k, w in enumerate(words)}
        self.idx2word = list(words)
        self.word2num_occurence = dict(zip(words, counts))
        self.idx2num_occurence = list(counts)


def atom_key(atom):
    key = atom.GetSymbol()
    if atom.GetNumExplicitHs() > 0:
        key += " H%d" % atom.GetNumExplicitHs()
    charge = atom.GetFormalCharge()
    if charge:
        key += " " + ("+" if charge > 0 else "-") * abs(charge)
    return key


def molecule_dict(smiles, target):
    mol = Chem.MolFromSmiles(smiles, sanitize=False)
    mol.UpdatePropertyCache(strict=False)
    n = mol.GetNumAtoms()
    atom_type = torch.tensor([ZINC_TYPES.index(atom_key(a)) for a in mol.GetAtoms()], dtype=torch.long)
    bond_type = torch.zeros(n, n, dtype=torch.long)
    for b in mol.GetBonds():
        i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        bond_type[i, j] = bond_type[j, i] = BONDS[b.GetBondType()]
    return {"num_atom": n, "atom_type": atom_type, "bond_type": bond_type,
            "logP_SA_cycle_normalized": torch.tensor([target], dtype=torch.float32)}


def main():
    with gzip.open(os.path.join(ROOT, "data", "assets", "molecules", "molecules.csv.gz"), "rt") as f:
        rows = list(csv.DictReader(f))
    total = sum(SIZES.values())
    by_size = sorted(enumerate(rows), key=lambda kr: (int(kr[1]["num_atoms"]), kr[0]))
    chosen, seen = [], set()
    for k, r in by_size:  # first the smallest molecule of every atom type not seen yet
        keys = {atom_key(a) for a in Chem.MolFromSmiles(r["smiles"], sanitize=False).GetAtoms()}
        if not keys <= seen:
            chosen.append((k, r))
            seen |= keys
    chosen += [kr for kr in by_size if kr not in chosen][:total - len(chosen)]
    chosen = sorted(chosen[:total], key=lambda kr: kr[0])  # embedded order, types spread over splits
    os.makedirs(OUT, exist_ok=True)
    manifest = ["split,index,row,smiles\n"]
    atom_counts = [0] * len(ZINC_TYPES)
    bond_counts = [0] * 4
    start = 0
    for split, size in SIZES.items():
        part = chosen[start:start + size]
        start += size
        molecules = []
        for index, (row, r) in enumerate(part):
            m = molecule_dict(r["smiles"], float(r["penalized_logp_normalized"]))
            molecules.append(m)
            manifest.append("%s,%d,%d,%s\n" % (split, index, row, r["smiles"]))
            for t in m["atom_type"].tolist():
                atom_counts[t] += 1
            for v in m["bond_type"].flatten().tolist():
                bond_counts[v] += 1
        with open(os.path.join(OUT, split + ".pickle"), "wb") as f:
            pickle.dump(molecules, f)
        with open(os.path.join(OUT, split + ".index"), "w", newline="") as f:
            f.write(",".join(map(str, SUBSET[split])) + "\r\n")
    with open(os.path.join(OUT, "atom_dict.pickle"), "wb") as f:
        pickle.dump(Dictionary(ZINC_TYPES, atom_counts), f)
    with open(os.path.join(OUT, "bond_dict.pickle"), "wb") as f:
        pickle.dump(Dictionary(["NONE", "SINGLE", "DOUBLE", "TRIPLE"], bond_counts), f)
    with open(os.path.join(OUT, "fixture_source.csv"), "w") as f:
        f.write("".join(manifest))
    print("wrote %s (%d molecules, torch %s, RDKit %s)" % (OUT, total, torch.__version__, Chem.rdBase.rdkitVersion))


if __name__ == "__main__":
    sys.exit(main())
