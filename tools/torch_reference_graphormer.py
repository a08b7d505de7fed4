#!/usr/bin/env python3
"""PyTorch reference for urpe's Graphormer (+ URPE): golden fixtures for tests/test_graphormer.cpp.

Why: models/graphormer.cpp must compute exactly the paper-era Graphormer of docs/graphormer.md
(GV1: pre-LN layers, a final LayerNorm, graph-token readout, multi-hop edge encoding, L1 loss) and
its URPE variant (C over the shortest-path distance, shared by all layers). This script
writes that model again in PyTorch, independently of the C++ code and in GV1's own style (a dense
graph_attn_bias built with in-place slice updates, torch.bmm over hops, a -inf attention bias and
no separate key-padding mask), on four small molecules whose collated tensors it builds itself
(BFS shortest paths with the parent rule of data/molecule_graph.h), and stores the inputs, the
weights, the predictions, the L1 loss and every parameter gradient:

  tests/fixtures/graphormer_base.safetensors   baseline
  tests/fixtures/graphormer_urpe.safetensors   URPE with a random C table and max_spd 3, so SPDs
                                               beyond the table and every graph-token bucket occur

The molecules (ZINC atom-type ids, bond types 1 single / 2 double / 3 triple) include a
disconnected one (unreachable pairs: spatial_pos 511, beyond the Spatial table, which urpe reads
as its last row) and one with SPD 4 > multi_hop_max_dist 3 (the hop cut and the clamped divisor).
The C++ test also collates the same SMILES with data/ and checks it gets these exact inputs.

Regenerate (Debian's python3-torch):

  /usr/bin/python3 tools/torch_reference_graphormer.py [--out tests/fixtures]

Row 0 of the atom, degree, edge and spatial tables is GV1's nn.Embedding(padding_idx=0): read by
the forward, never given a gradient (F.embedding with padding_idx=0 below).

Fixture version 2 (1 trained the padding rows). Everything is computed in float64 from float32-rounded weights, so the stored
values are the exact maths.
"""
import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import layer_norm, save_safetensors  # noqa: E402

FIXTURE_VERSION = "2"

# (SMILES, atom-type ids in AtomVocabulary::zinc(), bonds (begin, end, type), target)
MOLECULES = [
    ("CC(=O)O", [0, 0, 1, 1], [(0, 1, 1), (1, 2, 2), (1, 3, 1)], 0.75),
    ("N#C[NH3+]", [2, 0, 10], [(0, 1, 3), (1, 2, 1)], -1.25),
    ("C1=CC=CC=C1F", [0, 0, 0, 0, 0, 0, 3],
     [(0, 1, 2), (1, 2, 1), (2, 3, 2), (3, 4, 1), (4, 5, 2), (5, 0, 1), (5, 6, 1)], 2.5),
    ("CO.N", [0, 1, 2], [(0, 1, 1)], -0.5),
]
COLLATE_HOPS = 5      # the collator's multi_hop_max_dist (the model cuts to its own, smaller one)
UNREACHABLE = 510


# ---- collation (data/molecule_dataset.h layout, GV2 collator) ----

def shortest_paths(num_nodes, bonds):
    nbrs = [[] for _ in range(num_nodes)]
    bond_type = [[0] * num_nodes for _ in range(num_nodes)]
    for a, b, t in bonds:
        nbrs[a].append(b)
        nbrs[b].append(a)
        bond_type[a][b] = bond_type[b][a] = t
    for l in nbrs:
        l.sort()
    dist = [[UNREACHABLE] * num_nodes for _ in range(num_nodes)]
    parent = [[-1] * num_nodes for _ in range(num_nodes)]
    for s in range(num_nodes):
        dist[s][s] = 0
        queue = [s]
        for u in queue:  # BFS: a node's parent is the first dequeued neighbour that reaches it
            for v in nbrs[u]:
                if dist[s][v] == UNREACHABLE:
                    dist[s][v] = dist[s][u] + 1
                    parent[s][v] = u
                    queue.append(v)
    return nbrs, bond_type, dist, parent


def collate(molecules):
    graphs = [shortest_paths(len(types), bonds) for _, types, bonds, _ in molecules]
    B = len(molecules)
    n = max(len(types) for _, types, _, _ in molecules)
    longest = max(d for g in graphs for row in g[2] for d in row if d != UNREACHABLE)
    D = max(1, min(longest, COLLATE_HOPS))
    x = torch.zeros(B, n, dtype=torch.int32)
    in_degree = torch.zeros(B, n, dtype=torch.int32)
    spatial_pos = torch.zeros(B, n, n, dtype=torch.int32)
    edge_input = torch.zeros(B, n, n, D, dtype=torch.int32)
    attn_bias = torch.zeros(B, n + 1, n + 1)
    for g, ((_, types, _, _), (nbrs, bond_type, dist, parent)) in enumerate(zip(molecules, graphs)):
        N = len(types)
        for i in range(N):
            x[g, i] = types[i] + 2
            in_degree[g, i] = len(nbrs[i]) + 1
            for j in range(N):
                spatial_pos[g, i, j] = dist[i][j] + 1
                if i == j or dist[i][j] == UNREACHABLE:
                    continue
                path = [j]
                while path[-1] != i:
                    path.append(parent[i][path[-1]])
                path.reverse()  # i ... j
                for s in range(min(D, len(path) - 1)):
                    edge_input[g, i, j, s] = bond_type[path[s]][path[s + 1]] + 3
        attn_bias[g, :, N + 1:] = float("-inf")
    y = torch.tensor([m[3] for m in molecules])
    num_nodes = torch.tensor([len(m[1]) for m in molecules], dtype=torch.int32)
    return {"x": x, "in_degree": in_degree, "spatial_pos": spatial_pos, "edge_input": edge_input,
            "attn_bias": attn_bias, "y": y, "num_nodes": num_nodes}


# ---- parameters (names as in models/graphormer.cpp, GV1's own names) ----

def parameter_shapes(cfg):
    d, f, H = cfg["d_model"], cfg["d_ffn"], cfg["heads"]
    shapes = {
        "atom_encoder.weight": (cfg["num_atoms"], d),
        "edge_encoder.weight": (cfg["num_edges"], H),
        "edge_dis_encoder.weight": (cfg["num_edge_dis"] * H * H, 1),
        "spatial_pos_encoder.weight": (cfg["num_spatial"], H),
        "in_degree_encoder.weight": (cfg["num_degree"], d),
        "out_degree_encoder.weight": (cfg["num_degree"], d),
        "graph_token.weight": (1, d),
        "graph_token_virtual_distance.weight": (1, H),
    }
    for l in range(cfg["layers"]):
        p = f"layers.{l}."
        for ln in ("self_attention_norm", "ffn_norm"):
            shapes[p + ln + ".weight"] = (d,)
            shapes[p + ln + ".bias"] = (d,)
        for lin in ("linear_q", "linear_k", "linear_v", "output_layer"):
            shapes[p + "self_attention." + lin + ".weight"] = (d, d)
            shapes[p + "self_attention." + lin + ".bias"] = (d,)
        shapes[p + "ffn.fc1.weight"] = (f, d)
        shapes[p + "ffn.fc1.bias"] = (f,)
        shapes[p + "ffn.fc2.weight"] = (d, f)
        shapes[p + "ffn.fc2.bias"] = (d,)
    shapes["final_ln.weight"] = (d,)
    shapes["final_ln.bias"] = (d,)
    shapes["downstream_out_proj.weight"] = (1, d)
    shapes["downstream_out_proj.bias"] = (1,)
    if cfg["urpe"]:
        shapes["urpe_c"] = (H, cfg["max_spd"] + 4)
    return shapes


def random_parameters(cfg, g):
    """Far from GV1's tiny init on purpose: O(1) weights make every term visible in the outputs."""
    params = {}
    for name, shape in parameter_shapes(cfg).items():
        if name == "urpe_c":
            w = 0.5 + torch.rand(shape, generator=g)
        elif name.endswith("norm.weight") or name == "final_ln.weight":
            w = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            w = 0.1 * torch.randn(shape, generator=g)
        elif "encoder" in name or "graph_token" in name:
            w = 0.5 * torch.randn(shape, generator=g)
        else:
            w = torch.randn(shape, generator=g) / math.sqrt(shape[1])
        params[name] = w.to(torch.float32).to(torch.float64).requires_grad_(True)
    return params


# ---- the model (docs/graphormer.md#node-features to #output-and-loss, GV1 graphormer/model.py) ----

def urpe_c_matrix(cfg, P, inp):
    """C (B, H, n+1, n+1): c_h[min(SPD, max_spd)] on node pairs, three graph-token entries."""
    sp, nodes = inp["spatial_pos"].long(), inp["num_nodes"]
    B, n = sp.shape[:2]
    m = cfg["max_spd"]
    bucket = torch.zeros(B, n + 1, n + 1, dtype=torch.long, device=sp.device)
    bucket[:, 1:, 1:] = (sp - 1).clamp(0, m)
    bucket[:, 0, 1:] = m + 1   # graph token -> node
    bucket[:, 1:, 0] = m + 2   # node -> graph token
    bucket[:, 0, 0] = m + 3    # graph token itself
    C = P["urpe_c"][:, bucket].permute(1, 0, 2, 3)  # (B, H, n+1, n+1)
    # keys 0..num_nodes (graph token and real nodes) are 1, padded keys 0
    key_real = (torch.arange(n + 1, device=sp.device)[None, :] <= nodes.long()[:, None]).to(C.dtype)[:, None, None, :]
    return C * key_real  # padded keys 0


def padded(table, ids):
    """GV1's nn.Embedding(..., padding_idx=0) lookup: row 0 is read but gets no gradient."""
    return torch.nn.functional.embedding(ids, table, padding_idx=0)


def forward(cfg, P, inp):
    H, d = cfg["heads"], cfg["d_model"]
    x, deg = inp["x"].long(), inp["in_degree"].long()
    spatial_pos, edge_input, attn_bias = inp["spatial_pos"].long(), inp["edge_input"].long(), inp["attn_bias"]
    B, n = x.shape

    graph_attn_bias = attn_bias.clone().unsqueeze(1).repeat(1, H, 1, 1)  # (B, H, n+1, n+1)
    # Spatial encoding (indices beyond the table: its last row; GV1 never sees them on ZINC).
    sp_index = spatial_pos.clamp(max=cfg["num_spatial"] - 1)
    spatial_bias = padded(P["spatial_pos_encoder.weight"], sp_index).permute(0, 3, 1, 2)
    graph_attn_bias[:, :, 1:, 1:] = graph_attn_bias[:, :, 1:, 1:] + spatial_bias
    # Virtual distance of the graph token, both directions, (0, 0) once.
    t = P["graph_token_virtual_distance.weight"].view(1, H, 1)
    graph_attn_bias[:, :, 1:, 0] = graph_attn_bias[:, :, 1:, 0] + t
    graph_attn_bias[:, :, 0, :] = graph_attn_bias[:, :, 0, :] + t
    # Multi-hop edge encoding.
    sp_ = spatial_pos.clone()
    sp_[sp_ == 0] = 1
    sp_ = torch.where(sp_ > 1, sp_ - 1, sp_)
    sp_ = sp_.clamp(0, cfg["multi_hop_max_dist"])
    edge_input = edge_input[:, :, :, : cfg["multi_hop_max_dist"]].unsqueeze(-1)  # (B, n, n, D, Fe=1)
    e = padded(P["edge_encoder.weight"], edge_input).mean(-2)                   # (B, n, n, D, H)
    D = e.size(-2)
    flat = e.permute(3, 0, 1, 2, 4).reshape(D, -1, H)
    flat = torch.bmm(flat, P["edge_dis_encoder.weight"].reshape(-1, H, H)[:D, :, :])
    e = flat.reshape(D, B, n, n, H).permute(1, 2, 3, 0, 4)
    e = (e.sum(-2) / sp_.to(e.dtype).unsqueeze(-1)).permute(0, 3, 1, 2)
    graph_attn_bias[:, :, 1:, 1:] = graph_attn_bias[:, :, 1:, 1:] + e
    graph_attn_bias = graph_attn_bias + attn_bias.unsqueeze(1)  # GV1's "reset"

    C = urpe_c_matrix(cfg, P, inp) if cfg["urpe"] else None

    h = (padded(P["atom_encoder.weight"], x) + padded(P["in_degree_encoder.weight"], deg)
         + padded(P["out_degree_encoder.weight"], deg))
    token = P["graph_token.weight"].unsqueeze(0).repeat(B, 1, 1)
    out = torch.cat([token, h], dim=1)  # (B, n+1, d); input dropout off
    dh = d // H
    for l in range(cfg["layers"]):
        p = f"layers.{l}."

        def lin(z, name):
            return z @ P[p + name + ".weight"].t() + P[p + name + ".bias"]

        y = layer_norm(out, P[p + "self_attention_norm.weight"], P[p + "self_attention_norm.bias"])
        q = lin(y, "self_attention.linear_q").view(B, -1, H, dh).transpose(1, 2) * dh ** -0.5
        k = lin(y, "self_attention.linear_k").view(B, -1, H, dh).transpose(1, 2)
        v = lin(y, "self_attention.linear_v").view(B, -1, H, dh).transpose(1, 2)
        s = torch.matmul(q, k.transpose(2, 3)) + graph_attn_bias
        a = torch.softmax(s, dim=3)
        if C is not None:
            a = a * C  # URPE: after the softmax, before (the disabled) attention dropout
        z = torch.matmul(a, v).transpose(1, 2).reshape(B, -1, d)
        out = out + lin(z, "self_attention.output_layer")
        y = layer_norm(out, P[p + "ffn_norm.weight"], P[p + "ffn_norm.bias"])
        y = lin(torch.nn.functional.gelu(lin(y, "ffn.fc1")), "ffn.fc2")
        out = out + y
    out = layer_norm(out, P["final_ln.weight"], P["final_ln.bias"])
    pred = out[:, 0, :] @ P["downstream_out_proj.weight"].t() + P["downstream_out_proj.bias"]
    return pred.view(-1)


# ---- fixtures ----

def make_fixture(name, cfg, seed, out_dir):
    g = torch.Generator().manual_seed(seed)
    inp = collate(MOLECULES)
    P = random_parameters(cfg, g)
    pred = forward(cfg, P, inp)
    loss = (pred - inp["y"]).abs().mean()
    loss.backward()
    tensors = {"input." + k: v for k, v in inp.items()}
    for pname, w in P.items():
        tensors["param." + pname] = w
        tensors["grad." + pname] = w.grad
    tensors["output.predictions"] = pred
    tensors["output.loss"] = loss.reshape(())
    meta = {k: (int(v) if isinstance(v, bool) else v) for k, v in cfg.items()}
    meta["version"] = FIXTURE_VERSION
    meta["smiles"] = " ".join(m[0] for m in MOLECULES)
    meta["collate_hops"] = COLLATE_HOPS
    path = os.path.join(out_dir, f"graphormer_{name}.safetensors")
    save_safetensors(path, tensors, meta)
    print(f"wrote {path}: predictions {[round(v, 5) for v in pred.tolist()]}, loss {loss.item():.6f}, "
          f"{os.path.getsize(path)} bytes")


def write_fixtures(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    base = {"layers": 2, "d_model": 8, "d_ffn": 12, "heads": 2, "multi_hop_max_dist": 3,
            "num_atoms": 16, "num_edges": 8, "num_spatial": 8, "num_degree": 6, "num_edge_dis": 4,
            "urpe": False, "max_spd": 3}
    make_fixture("base", base, 11, out_dir)
    make_fixture("urpe", dict(base, urpe=True), 12, out_dir)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    write_fixtures(os.path.normpath(args.out))


if __name__ == "__main__":
    main()
