#!/usr/bin/env python3
"""Writes tests/fixtures/ogb_features.csv.gz: OGB's smiles2graph features (ogb.utils.smiles2graph,
RDKit underneath: 9 atom and 3 bond features per molecule) for about 13,000 SMILES, the reference
the C++ featuriser (data/ogb_features.h) is checked against in tests/test_ogb_features.cpp, which
needs neither RDKit nor OGB. Run with both installed (smiles2graph needs only RDKit and numpy, so
OGB can go in without its torch dependency):

    python3 -m venv /tmp/v && /tmp/v/bin/pip install rdkit numpy && /tmp/v/bin/pip install --no-deps ogb
    /tmp/v/bin/python tools/make_ogb_fixture.py

Part 1, form "canonical", one group each (every SMILES RDKit's canonical isomeric SMILES, the form
PCQM4M's CSV holds):
  * 700 rows of the embedded set (data/assets/molecules: drug-like screening compounds);
  * the 100 ZINC-250k molecules of data/assets/molecules/zim100.csv (stereocentres, E/Z bonds);
  * 2 stereoisomers each of 150 more embedded molecules with unassigned stereo (RDKit's
    EnumerateStereoisomers: tetrahedral centres and double bonds written with @, @@, / and \\);
  * the hand-written list below: radicals (PCQM4M has many, e.g. [CH2], [N]), charges, rarer
    elements (B, Si, P, Se, As, Ge, halogens), triple bonds, N-oxides, fused heteroaromatics.
Part 2, the 5,000 NCI molecules RDKit ships (rdkit/Data/NCI/first_5K.smi, RDKit's own test set,
mostly written in Kekulé form), those RDKit parses, each in up to three forms of the same molecule:
  * "written": the SMILES as the file writes it (Kekulé rings, non-canonical atom order);
  * "canonical": RDKit's canonical SMILES (aromatic rings lowercase);
  * "kekule": for every third molecule, a Kekulé SMILES in a random atom order (MolToSmiles with
    kekuleSmiles and doRandom, seeded).
The forms of one molecule share its group number, so the test can check that urpe gives each form
the same features (as multisets: the atom orders differ). RDKit perceives aromaticity itself, so
its features do not depend on the form.
Rows are sampled with a fixed seed, so rerunning gives the same file (gzip mtime 0).

Columns: smiles, form, group, atoms, bonds
  atoms  per atom, in RDKit's order (the SMILES' order), its 9 features separated by spaces,
         atoms separated by ';': atomic number − 1, chirality, degree, formal charge (+5),
         H count, radical electrons, hybridisation, aromatic, in ring (ogb/utils/features.py)
  bonds  per bond (each once, RDKit's bond order) "begin end type stereo conjugated", ';'-separated
"""
import csv
import gzip
import io
import os
import random
import sys

import rdkit
from ogb.utils import smiles2graph
from rdkit import Chem, rdBase
from rdkit.Chem.EnumerateStereoisomers import EnumerateStereoisomers, StereoEnumerationOptions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "ogb_features.csv.gz")

HAND_WRITTEN = [
    # radicals and carbenes
    "[CH3]", "[CH2]", "[CH]", "[C]", "[NH2]", "[NH]", "[N]", "[OH]", "[O]", "C[CH2]", "C[CH]C", "CC(C)[C]",
    "O=C1[N]c2ccncc2[CH]C1", "C=C[CH2]", "c1ccc([CH2])cc1", "[O]c1ccccc1", "CC(=O)[O]", "C[N]C", "[CH2]C=O",
    "[SiH3]", "[BH2]", "C[Si](C)(C)[O]", "N#C[CH2]", "[CH2]C#N", "O=[C]c1ccccc1",
    # charges
    "C[N+](C)(C)C", "[NH4+]", "CC(=O)[O-]", "[O-][N+](=O)c1ccccc1", "C[n+]1ccccc1", "[O-][n+]1ccccc1",
    "C[S+](C)C", "[Cl-]", "[Na+]", "C[C-](C)C", "[CH2-]C", "C[O+](C)C", "[NH3+]CC(=O)[O-]", "c1cc[cH-]c1",
    "C1=CC=[CH+]1", "[N-]=[N+]=N", "CN=[N+]=[N-]", "C=[N+]=[N-]", "[BH4-]", "F[B-](F)(F)F", "O=[N+][O-]",
    "[O-][Se](=O)[O-]", "C[P+](C)(C)C", "[C-]#[O+]", "[N-]1C=CC=C1", "[nH+]1ccccc1", "c1cc[nH+]cc1",
    # rarer elements and valences
    "B(O)(O)c1ccccc1", "CB(C)C", "C[Si](C)(C)C", "C[Si](C)(C)Cl", "OP(=O)(O)O", "CP(C)C", "COP(=O)(OC)OC",
    "C[Se]C", "c1cc[se]c1", "C[As](C)C", "C[Ge](C)(C)C", "FC(F)(F)F", "ClC(Cl)(Cl)Cl", "BrCBr", "IC", "CS(=O)(=O)C",
    "CS(C)=O", "O=S(=O)(O)O", "FS(F)(F)(F)(F)F", "CP(=O)(C)C", "c1ccc2[nH]ccc2c1", "c1ccsc1", "c1ccoc1", "c1cc[nH]c1",
    "c1ncncn1", "c1nc2ncnc-2[nH]1", "c1ccc2ncccc2c1", "c1ccc2c(c1)ccc1ccccc12", "c1cc2cccc3ccc(c1)c32",
    "c1ccc2cc3ccccc3cc2c1", "C1=CC=CC=CC=C1", "c1ccc1", "C1=CC1", "C1CC1", "C1CCCCCCC1", "C12CC1C2",
    "c1cnn[nH]1", "c1nnn[nH]1", "Cn1cnc2c1c(=O)n(C)c(=O)n2C", "O=c1cc[nH]cc1", "O=c1ccoc2ccccc12", "c1cn2ccccc2n1",
    "B1OC(C)(C)C(C)(C)O1", "c1ccc2c(c1)[nH]c1ccccc12", "C1=CN=CN1", "N1C=CC=C1", "O=C1C=CC(=O)C=C1",
    # multiple bonds, allenes, cumulenes, nitriles, isonitriles
    "C#C", "CC#CC", "C#N", "CC#N", "C=C=C", "C=C=O", "N=C=O", "S=C=S", "[C-]#[N+]C", "C=C=C=C", "O=C=O",
    "N#CC#N", "C#CC#C", "C=CC=C", "C=CC=O", "C=CC#N", "CC=NO", "C=NN", "N=NC", "CN=NC",
    # stereo written by hand
    "C/C=C/C", "C/C=C\\C", "F/C=C/F", "F/C=C\\F", "C/C=C(/F)Cl", "Cl/C=C/Br", "C/C=N/O", "C/N=N/C",
    "C[C@H](N)C(=O)O", "C[C@@H](N)C(=O)O", "N[C@@H](Cc1ccccc1)C(=O)O", "C[C@H]1CC[C@@H](C)CC1",
    "O[C@H]1[C@H](O)[C@@H](O)[C@H](O)[C@@H](O)[C@@H]1O", "C[C@]12CC[C@H]3[C@@H](CC=C4C[C@@H](O)CC[C@@]43C)[C@@H]1CC[C@@H]2O",
    "F[C@](Cl)(Br)I", "C[S@](=O)c1ccccc1", "C[P@](=O)(O)F", "C[N@+](CC)(CCC)CCCC", "C/C=C/C=C/C",
    "C1CC/C=C/CC1", "C/C=C/[C@H](C)O", "O/N=C1/CCCCC1",
    # small PCQM4M-like molecules
    "CC(C)O", "CCO", "CC(=O)O", "CC(=O)N", "CC(=O)OC", "NC(=O)N", "CNC(=O)OC", "O=CC=O", "OCCO", "CC(O)CO",
    "c1ccccc1O", "c1ccccc1N", "Nc1ccncc1", "Oc1ccc(O)cc1", "O=Cc1ccco1", "Cc1ccc(C)cc1", "CC(C)(C)C",
    "O=C1CCCC1", "O=C1CCC(=O)N1", "C1COCCN1", "C1CCNCC1", "C1CSCS1", "O=C1OCCO1", "CC1=CC(=O)C=CC1=O",
    "N#Cc1ccccc1", "O=[N+]([O-])C", "CON=O", "ON=O", "OO", "CSSC", "CSC", "CS", "NN", "NO", "O", "N", "C",
    "[H][H]", "[HH]", "[2H]C", "[13CH4]", "[H]C([H])([H])[H]", "OB(O)O", "[SiH4]", "P", "S", "Cl", "Br", "F",
    # dative bonds, metals, and the perception cases a Kekulé SMILES exercises
    "N->[Cu]", "[Cu]<-N", "O->[Cu]", "c1ccccn1->[Cu+2]", "CC(=O)O->[Zn]<-OC(C)=O", "C[N](C)->[Pt]<-N(C)C",
    "Cc1ccc(S)cc1", "c1ccc2cccc2cc1", "O=c1cccc[nH]1", "c1cc[o+]cc1", "C1=CC=CC=CC=C1", "c1cc2ccc3cccc4ccc(c1)c2c34",
    "OCl(=O)(=O)=O", "O=I(=O)O", "CN(C)C1=[S+][Zn]2(S1)SC(=[S+]2)N(C)C",
]


def features(smiles):
    g = smiles2graph(smiles)
    atoms = ";".join(" ".join(str(int(v)) for v in row) for row in g["node_feat"])
    pairs = g["edge_index"].T[::2]  # each bond is written twice, (i, j) then (j, i)
    bonds = ";".join("%d %d %s" % (int(i), int(j), " ".join(str(int(v)) for v in f))
                     for (i, j), f in zip(pairs, g["edge_feat"][::2]))
    return atoms, bonds


def nci_smiles():
    path = os.path.join(os.path.dirname(rdkit.__file__), "Data", "NCI", "first_5K.smi")
    with open(path) as f:
        return [line.split()[0] for line in f if line.strip()]


def canonical(smiles):
    mol = Chem.MolFromSmiles(smiles)
    return None if mol is None else Chem.MolToSmiles(mol)


def main():
    rng = random.Random(1)
    with gzip.open(os.path.join(ROOT, "data", "assets", "molecules", "molecules.csv.gz"), "rt") as f:
        embedded = [r["smiles"] for r in csv.DictReader(f)]
    with open(os.path.join(ROOT, "data", "assets", "molecules", "zim100.csv"), newline="") as f:
        zinc = [r["smiles"].strip() for r in csv.DictReader(f)]
    order = list(range(len(embedded)))
    rng.shuffle(order)
    chosen = [canonical(embedded[k]) for k in order[:700]]
    chosen += [canonical(s) for s in zinc]
    options = StereoEnumerationOptions(onlyUnassigned=True, maxIsomers=2, rand=7, unique=True)
    stereo = 0
    for k in order[700:]:
        if stereo >= 150:
            break
        mol = Chem.MolFromSmiles(embedded[k])
        isomers = [Chem.MolToSmiles(m) for m in EnumerateStereoisomers(mol, options=options)]
        if len(isomers) == 2 and any(c in isomers[0] for c in "@/\\"):
            chosen += isomers
            stereo += 1
    chosen += [canonical(s) for s in HAND_WRITTEN]
    seen, rows = set(), []
    for smiles in chosen:
        if smiles is None or smiles in seen:
            continue
        seen.add(smiles)
        atoms, bonds = features(smiles)
        rows.append((smiles, "canonical", len(rows), atoms, bonds))
    # Part 2: the NCI set in its written, canonical and random Kekulé forms.
    rdBase.DisableLog("rdApp.*")  # RDKit's warnings about the molecules it refuses
    group = len(rows)
    kekule_rng = random.Random(2)
    for k, written in enumerate(nci_smiles()):
        mol = Chem.MolFromSmiles(written)
        if mol is None:
            continue
        forms = [("written", written), ("canonical", Chem.MolToSmiles(mol))]
        if k % 3 == 0:
            kekulized = Chem.Mol(mol)
            Chem.Kekulize(kekulized, clearAromaticFlags=True)
            order = list(range(kekulized.GetNumAtoms()))
            kekule_rng.shuffle(order)
            shuffled = Chem.RenumberAtoms(kekulized, order)
            forms.append(("kekule", Chem.MolToSmiles(shuffled, canonical=False, kekuleSmiles=True)))
        for form, smiles in forms:
            atoms, bonds = features(smiles)
            rows.append((smiles, form, group, atoms, bonds))
        group += 1
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["smiles", "form", "group", "atoms", "bonds"])
    writer.writerows(rows)
    with open(OUT, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
            f.write(text.getvalue().encode())
    print("wrote %s: %d SMILES of %d molecules (RDKit %s)" % (OUT, len(rows), group, rdBase.rdkitVersion))


if __name__ == "__main__":
    sys.exit(main())
