#!/usr/bin/python3
"""Builds the embedded molecule dataset under data/assets/molecules/ (deterministic output).

Run with Debian's Python and RDKit (not a virtualenv):
    apt-get install python3-rdkit rdkit-data python3-networkx
    /usr/bin/python3 tools/make_molecules.py            # writes data/assets/molecules/*

Inputs (Debian package rdkit-data, BSD-3-Clause):
  /usr/share/RDKit/Data/Pains/test_data/wehi_mols.csv    10,000 screening compounds (SMILES, id)
  /usr/share/RDKit/Contrib/SA_Score/data/zim.100.txt     100 ZINC molecules + reference SA scores

Outputs:
  molecules.csv.gz  one row per molecule (gzip with mtime 0, so rebuilding gives the same bytes):
                    smiles,name,logP,SAS,cycle_penalty,penalized_logp,penalized_logp_normalized,
                    num_atoms,num_bonds,num_rings (num_rings = cycle rank: bonds - atoms + 1)
  split.csv         row,split   (row = 0-based data row of molecules.csv.gz; 80/10/10, seed 1)
  atom_types.txt    the 28 Benchmarking-GNNs ZINC atom types, one per line, line k = type id k
  zim100.csv        test fixture in the ZINC-250k CSV layout (smiles,logP,qed,SAS + reference
                    counts from RDKit); the SMILES field is quoted and ends with a newline inside
                    the quotes, exactly like 250k_rndm_zinc_drugs_clean_3.csv.

Choices (see data/assets/README, section "Molecules"):
  * SMILES are RDKit canonical *Kekulé* SMILES of the heavy-atom graph: bonds are single, double
    or triple as in the ZINC benchmark (no aromatic bond type), and pyrrole-type N-H is written
    without brackets, so every atom falls within ZINC's 28 types (element + charge + bracket H).
  * Molecules with several fragments ('.', salts and solvates) are dropped: 3 of 10,000.
  * Cycle penalty = max(0, largest cycle - 6) over networkx.cycle_basis of the atom graph in the
    stored SMILES' atom order (JT-VAE's definition, which the C++ code reproduces exactly).
  * penalized_logp = logP - SAS - cycle_penalty (Crippen logP, Ertl SA score);
    penalized_logp_normalized = the same three terms, each normalised with the ZINC-250k
    constants of JT-VAE, summed: the scale of the benchmark ZINC label.
"""
import argparse
import csv
import gzip
import io
import os
import random
import statistics
import sys

import networkx as nx
from rdkit import Chem, RDConfig, RDLogger, rdBase
from rdkit.Chem import Crippen, QED

sys.path.append(os.path.join(RDConfig.RDContribDir, "SA_Score"))
import sascorer  # noqa: E402

RDLogger.DisableLog("rdApp.*")

WEHI = "/usr/share/RDKit/Data/Pains/test_data/wehi_mols.csv"
ZIM100 = "/usr/share/RDKit/Contrib/SA_Score/data/zim.100.txt"

# Benchmarking-GNNs ZINC atom dictionary, in id order (graphdeeplearning/benchmarking-gnns).
ZINC_ATOM_TYPES = [
    "C", "O", "N", "F", "C H1", "S", "Cl", "O -", "N H1 +", "Br", "N H3 +", "N H2 +", "N +",
    "N -", "S -", "I", "P", "O H1 +", "N H1 -", "O +", "S +", "P H1", "P H2", "C H2 -", "P +",
    "S H1 +", "C H1 -", "P H1 +",
]

# JT-VAE normalisation constants (statistics of 250k_rndm_zinc_drugs_clean.smi).
LOGP_MEAN, LOGP_STD = 2.4570953396190123, 1.434324401111988
SA_MEAN, SA_STD = -3.0525811293166134, 0.8335207024513095
CYCLE_MEAN, CYCLE_STD = -0.0485696876403053, 0.2860212110245455


def atom_type_key(atom):
    """'N H1 +' style key: element, then ' H<n>' for a bracket H count, then one sign per charge.
    Computed on an unsanitised parse, so the H count is the one written in the SMILES."""
    key = atom.GetSymbol()
    if atom.GetNumExplicitHs():
        key += " H%d" % atom.GetNumExplicitHs()
    charge = atom.GetFormalCharge()
    if charge:
        key += " " + ("+" if charge > 0 else "-") * abs(charge)
    return key


def cycle_penalty(mol):
    """JT-VAE: cycle basis of the atom graph (networkx, atom order of mol), penalty max(0, L-6)."""
    graph = nx.Graph(Chem.rdmolops.GetAdjacencyMatrix(mol))
    cycles = nx.cycle_basis(graph)
    longest = max((len(c) for c in cycles), default=0)
    return max(0, longest - 6)


def cycle_rank(mol):
    """Independent cycles = bonds - atoms + fragments: the number of ring-closure bonds a SMILES
    of this molecule writes. (RDKit's GetSSSR is symmetrised and counts 3 rings in quinuclidine.)"""
    return mol.GetNumBonds() - mol.GetNumAtoms() + len(Chem.GetMolFrags(mol))


def targets(mol):
    logp = Crippen.MolLogP(mol)
    sas = sascorer.calculateScore(mol)
    penalty = cycle_penalty(mol)
    raw = logp - sas - penalty
    normalized = ((logp - LOGP_MEAN) / LOGP_STD + (-sas - SA_MEAN) / SA_STD
                  + (-penalty - CYCLE_MEAN) / CYCLE_STD)
    return logp, sas, penalty, raw, normalized


def build_dataset(out_dir, seed):
    rows = []
    dropped = []
    with open(WEHI, newline="") as f:
        for smiles, name in csv.reader(f):
            mol = Chem.MolFromSmiles(smiles)
            if mol is None or len(Chem.GetMolFrags(mol)) != 1:
                dropped.append(name)
                continue
            Chem.Kekulize(mol, clearAromaticFlags=True)
            kekule = Chem.MolToSmiles(mol, kekuleSmiles=True)
            mol = Chem.MolFromSmiles(kekule)  # atom order of the stored string
            raw_mol = Chem.MolFromSmiles(kekule, sanitize=False)
            unknown = {atom_type_key(a) for a in raw_mol.GetAtoms()} - set(ZINC_ATOM_TYPES)
            assert not unknown, (name, kekule, unknown)
            assert all(b.GetBondTypeAsDouble() in (1.0, 2.0, 3.0) for b in raw_mol.GetBonds())
            logp, sas, penalty, raw, normalized = targets(mol)
            rows.append([kekule, name, "%.4f" % logp, "%.4f" % sas, str(penalty), "%.4f" % raw,
                         "%.4f" % normalized, str(mol.GetNumAtoms()), str(mol.GetNumBonds()),
                         str(cycle_rank(mol))])

    header = ["smiles", "name", "logP", "SAS", "cycle_penalty", "penalized_logp",
              "penalized_logp_normalized", "num_atoms", "num_bonds", "num_rings"]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    with open(os.path.join(out_dir, "molecules.csv.gz"), "wb") as raw_file:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw_file, mtime=0, compresslevel=9) as gz:
            gz.write(text.getvalue().encode("ascii"))

    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_train, n_valid = int(0.8 * len(rows)), int(0.1 * len(rows))
    split = ["train"] * len(rows)
    for k in order[n_train:n_train + n_valid]:
        split[k] = "valid"
    for k in order[n_train + n_valid:]:
        split[k] = "test"
    with open(os.path.join(out_dir, "split.csv"), "w", newline="") as f:
        f.write("row,split\n")
        for k, s in enumerate(split):
            f.write("%d,%s\n" % (k, s))

    with open(os.path.join(out_dir, "atom_types.txt"), "w") as f:
        for t in ZINC_ATOM_TYPES:
            f.write(t + "\n")

    report(rows, split, dropped)


def report(rows, split, dropped):
    atoms = [int(r[7]) for r in rows]
    print("molecules %d (dropped %d multi-fragment: %s)" % (len(rows), len(dropped), " ".join(dropped)))
    print("atoms per molecule: min %d max %d mean %.2f" % (min(atoms), max(atoms), statistics.mean(atoms)))
    print("bonds per molecule: mean %.2f" % statistics.mean(int(r[8]) for r in rows))
    print("molecules with cycle_penalty > 0: %d" % sum(r[4] != "0" for r in rows))
    for column, name in ((5, "penalized_logp"), (6, "penalized_logp_normalized")):
        y = [float(r[column]) for r in rows]
        train = [v for v, s in zip(y, split) if s == "train"]
        test = [v for v, s in zip(y, split) if s == "test"]
        mean = statistics.mean(train)
        mae = statistics.mean(abs(v - mean) for v in test)
        print("%s: mean %.3f std %.3f; predict-the-train-mean MAE on test %.4f" %
              (name, statistics.mean(y), statistics.pstdev(y), mae))
    print("split: train %d valid %d test %d" % tuple(split.count(s) for s in ("train", "valid", "test")))


def build_fixture(out_dir):
    out = ["smiles,logP,qed,SAS,name,sa_reference,num_atoms,num_bonds,num_aromatic_bonds,"
           "num_rings,total_charge,total_bracket_h,cycle_penalty\n"]
    worst = 0.0
    with open(ZIM100) as f:
        lines = f.read().splitlines()[1:]
    for line in lines:
        smiles, name, sa_ref = line.split("\t")
        mol = Chem.MolFromSmiles(smiles)
        raw_mol = Chem.MolFromSmiles(smiles, sanitize=False)  # bonds and H exactly as written
        assert mol.GetNumAtoms() == raw_mol.GetNumAtoms()
        logp, sas, penalty, _, _ = targets(mol)
        worst = max(worst, abs(sas - float(sa_ref)))
        aromatic = sum(b.GetBondType() == Chem.BondType.AROMATIC for b in raw_mol.GetBonds())
        out.append('"%s\n",%.4f,%.6f,%.4f,%s,%s,%d,%d,%d,%d,%d,%d,%d\n' % (
            smiles, logp, QED.qed(mol), sas, name, sa_ref, mol.GetNumAtoms(), mol.GetNumBonds(),
            aromatic, cycle_rank(mol), sum(a.GetFormalCharge() for a in raw_mol.GetAtoms()),
            sum(a.GetNumExplicitHs() for a in raw_mol.GetAtoms()), penalty))
    with open(os.path.join(out_dir, "zim100.csv"), "w", newline="") as f:
        f.writelines(out)
    print("zim100 fixture: %d molecules; largest |SAS - reference| = %.3f" % (len(lines), worst))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--out", default=os.path.join(here, "..", "data", "assets", "molecules"))
    parser.add_argument("--seed", type=int, default=1, help="seed of the 80/10/10 split")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print("RDKit %s, networkx %s" % (rdBase.rdkitVersion, nx.__version__))
    build_dataset(args.out, args.seed)
    build_fixture(args.out)


if __name__ == "__main__":
    main()
