#!/usr/bin/env python3
"""Writes tests/fixtures/pcqm4m_v2/: a small folder in the layout OGB's PCQM4Mv2Dataset unzips
(raw/data.csv.gz with idx,smiles,homolumogap, written by pandas with the hidden test labels as
empty fields; split_dict.pt, torch.save of the train / valid / test-dev / test-challenge index
arrays as numpy arrays), plus split_dict_tensors.pt holding the same indices as torch tensors,
for tools/pcqm4m_to_urpe.py's test (tests/test_ogb_features.cpp). Needs torch, numpy and pandas:

    /tmp/v/bin/pip install torch numpy pandas && /tmp/v/bin/python tools/make_pcqm4m_fixture.py

The molecules are the first 30 of tests/fixtures/ogb_features.csv.gz; their labels are made up
(3 + 0.1·k), since only the layout is being tested.
"""
import csv
import gzip
import os

import numpy as np
import pandas as pd
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "pcqm4m_v2")
SPLIT = {"train": list(range(0, 20)), "valid": list(range(20, 25)), "test-dev": [25, 26, 27], "test-challenge": [28, 29]}


def main():
    with gzip.open(os.path.join(ROOT, "tests", "fixtures", "ogb_features.csv.gz"), "rt") as f:
        smiles = [r["smiles"] for r in csv.DictReader(f)][:30]
    labels = [3.0 + 0.1 * k if k < 25 else float("nan") for k in range(30)]
    os.makedirs(os.path.join(OUT, "raw"), exist_ok=True)
    frame = pd.DataFrame({"idx": range(30), "smiles": smiles, "homolumogap": labels})
    frame.to_csv(os.path.join(OUT, "raw", "data.csv.gz"), index=False, compression={"method": "gzip", "mtime": 0})
    torch.save({k: np.array(v, dtype=np.int64) for k, v in SPLIT.items()}, os.path.join(OUT, "split_dict.pt"))
    torch.save({k: torch.tensor(v, dtype=torch.long) for k, v in SPLIT.items()}, os.path.join(OUT, "split_dict_tensors.pt"))
    print("wrote %s (torch %s, numpy %s, pandas %s)" % (OUT, torch.__version__, np.__version__, pd.__version__))


if __name__ == "__main__":
    main()
