#!/usr/bin/env python3
"""PyTorch reference for urpe's Transformer-XL (+ URPE): golden fixtures for tests/test_transformer_xl.cpp.

Why: models/transformer_xl.cpp must compute exactly the model of docs/transformer_xl.md (the official
kimiyoung/transformer-xl PyTorch code) and its URPE variant (#urpe-variant). This script writes that model
again in PyTorch, independently of the C++ code and in the official code's own style (time-major
tensors, einsum scores, `_rel_shift` by zero-padding and reinterpreting the buffer, a -inf mask),
runs two (or three) segments with memory, and stores the weights, every segment's tokens and targets,
logits, losses and every parameter gradient of the summed loss in small safetensors files:

  tests/fixtures/txl_base.safetensors       baseline, full softmax
  tests/fixtures/txl_urpe.safetensors       URPE (random C), clamp_len 7, a C table shorter than klen,
                                            H*dh != d
  tests/fixtures/txl_adaptive.safetensors   baseline with the adaptive softmax (docs/transformer_xl.md#adaptive-softmax; cutoffs 5, 9)
  tests/fixtures/txl_urpe_eval.safetensors  URPE with evaluation-style memory: mem_len 7 > tgt_len 5,
                                            clamp_len 3, same_length, three segments
  tests/fixtures/txl_alibi.safetensors      ALiBi in place of the BD term (docs/transformer_xl.md#alibi-variant),
                                            3 heads (the slopes of a non-power-of-two head count)
  tests/fixtures/txl_alibi_urpe_eval.safetensors  ALiBi + URPE with the evaluation-style memory above

Regenerate (Debian's python3-torch):

  /usr/bin/python3 tools/torch_reference_txl.py [--out tests/fixtures] [--only alibi,alibi_urpe_eval]

Fixture version 1. Everything is computed in float64 from float32-rounded weights, so the stored
values are the exact maths. The memory is detached between segments (as in the official code), so
the gradient of the summed loss is the sum of each segment's own gradient.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import (  # noqa: E402
    alibi_slopes, layer_norm, random_fixture_parameters, save_safetensors, store_parameters_and_gradients)

FIXTURE_VERSION = "1"


# ---- parameters (names as in models/transformer_xl.cpp) ----

def parameter_shapes(cfg):
    V, d, H, dh, f = cfg["vocab"], cfg["d_model"], cfg["heads"], cfg["d_head"], cfg["d_inner"]
    shapes = {"word_emb.weight": (V, d), "r_w_bias": (H, dh)}
    if not cfg["alibi"]:  # ALiBi has no R, so neither r_r_bias nor r_net
        shapes["r_r_bias"] = (H, dh)
    for l in range(cfg["layers"]):
        p = f"layers.{l}."
        shapes[p + "attn.qkv_net.weight"] = (3 * H * dh, d)
        if not cfg["alibi"]:
            shapes[p + "attn.r_net.weight"] = (H * dh, d)
        shapes[p + "attn.o_net.weight"] = (d, H * dh)
        shapes[p + "attn.layer_norm.weight"] = (d,)
        shapes[p + "attn.layer_norm.bias"] = (d,)
        shapes[p + "ff.fc1.weight"] = (f, d)
        shapes[p + "ff.fc1.bias"] = (f,)
        shapes[p + "ff.fc2.weight"] = (d, f)
        shapes[p + "ff.fc2.bias"] = (d,)
        shapes[p + "ff.layer_norm.weight"] = (d,)
        shapes[p + "ff.layer_norm.bias"] = (d,)
    shapes["out_bias"] = (V,)
    if cfg["cutoffs"]:
        shapes["cluster_weight"] = (len(cfg["cutoffs"]), d)
        shapes["cluster_bias"] = (len(cfg["cutoffs"]),)
    if cfg["urpe"]:
        shapes["urpe_c"] = (H, cfg["max_klen"])
    return shapes


# ---- the model (docs/transformer_xl.md#embedding to #adaptive-softmax, official mem_transformer.py) ----

def rel_shift(x):
    """The official _rel_shift: x (qlen, klen, B, H); pad a zero column, view, drop a row, view."""
    zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]), dtype=x.dtype, device=x.device)
    x_padded = torch.cat([zero_pad, x], dim=1)
    x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
    return x_padded[1:].view_as(x)


def positional_embedding(cfg, klen, device="cpu"):
    pos_seq = torch.arange(klen - 1, -1, -1.0, device=device)
    if cfg["clamp_len"] > 0:
        pos_seq = pos_seq.clamp(max=cfg["clamp_len"])
    d = cfg["d_model"]
    inv_freq = 1 / (10000 ** (torch.arange(0.0, d, 2.0, device=device) / d))
    sinusoid = torch.outer(pos_seq, inv_freq)
    return torch.cat([sinusoid.sin(), sinusoid.cos()], dim=-1)  # (klen, d)


def urpe_c_matrix(cfg, P, qlen, mlen):
    """C[i, j, 1, h] = c_h[min(mlen + i - j, clamp_len, max_klen - 1)] for j <= mlen + i, else 0."""
    klen = mlen + qlen
    longest = cfg["max_klen"] - 1
    if cfg["clamp_len"] > 0:
        longest = min(longest, cfg["clamp_len"])
    dev = P["urpe_c"].device
    i = torch.arange(qlen, device=dev)[:, None]
    j = torch.arange(klen, device=dev)[None, :]
    delta = mlen + i - j
    visible = (delta >= 0).to(P["urpe_c"].dtype)  # the table's dtype: float64 fixtures, float32 benches
    index = delta.clamp(min=0, max=longest)
    C = P["urpe_c"][:, index] * visible  # (H, qlen, klen)
    return C.permute(1, 2, 0)[:, :, None, :]  # (qlen, klen, 1, H)


def alibi_bias(cfg, qlen, mlen, device="cpu"):
    """bias[i, j, 1, h] = -m_h * min(mlen + i - j, clamp_len) for visible keys (0 for the masked future)."""
    klen = mlen + qlen
    delta = (mlen + torch.arange(qlen, device=device)[:, None] - torch.arange(klen, device=device)[None, :]).clamp(min=0).to(torch.get_default_dtype())
    if cfg["clamp_len"] > 0:
        delta = delta.clamp(max=cfg["clamp_len"])
    slopes = torch.tensor(alibi_slopes(cfg["heads"]), dtype=torch.get_default_dtype(), device=device)
    return (-delta[:, :, None] * slopes[None, None, :])[:, :, None, :]  # (qlen, klen, 1, H)


def attention_layer(cfg, P, l, w, r, mem):
    """w (qlen, B, d), r (klen, d), mem (mlen, B, d) -> LN(w + attention) (qlen, B, d)."""
    p = f"layers.{l}.attn."
    H, dh = cfg["heads"], cfg["d_head"]
    qlen, B = w.size(0), w.size(1)
    cat = torch.cat([mem, w], 0)
    klen = cat.size(0)
    mlen = klen - qlen
    w_heads = cat @ P[p + "qkv_net.weight"].T
    w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
    w_head_q = w_head_q[-qlen:].reshape(qlen, B, H, dh)
    w_head_k = w_head_k.reshape(klen, B, H, dh)
    w_head_v = w_head_v.reshape(klen, B, H, dh)

    AC = torch.einsum("ibnd,jbnd->ijbn", w_head_q + P["r_w_bias"], w_head_k)
    if cfg["alibi"]:  # ALiBi: a fixed bias added after the scaling, as in Press et al.'s code
        score = AC * (1 / dh ** 0.5) + alibi_bias(cfg, qlen, mlen, w.device)
    else:
        r_head_k = (r @ P[p + "r_net.weight"].T).reshape(klen, H, dh)
        BD = rel_shift(torch.einsum("ibnd,jnd->ijbn", w_head_q + P["r_r_bias"], r_head_k))
        score = (AC + BD) * (1 / dh ** 0.5)
    all_ones = torch.ones(qlen, klen, device=w.device)
    mask = torch.triu(all_ones, diagonal=1 + mlen)
    if cfg["same_length"]:  # the official dec_attn_mask with same_length
        mask_len = klen - cfg["mem_len"]
        mask_shift_len = qlen - mask_len if mask_len > 0 else qlen
        mask = mask + torch.tril(all_ones, -mask_shift_len)
    mask = mask.bool()[:, :, None, None]
    score = score.masked_fill(mask, -float("inf"))
    prob = torch.softmax(score, dim=1)
    if cfg["urpe"]:
        prob = prob * urpe_c_matrix(cfg, P, qlen, mlen)  # URPE: after the softmax
    vec = torch.einsum("ijbn,jbnd->ibnd", prob, w_head_v).reshape(qlen, B, H * dh)
    out = vec @ P[p + "o_net.weight"].T
    return layer_norm(w + out, P[p + "layer_norm.weight"], P[p + "layer_norm.bias"])


def ff_layer(P, l, x):
    p = f"layers.{l}.ff."
    h = torch.relu(x @ P[p + "fc1.weight"].T + P[p + "fc1.bias"])
    y = h @ P[p + "fc2.weight"].T + P[p + "fc2.bias"]
    return layer_norm(x + y, P[p + "layer_norm.weight"], P[p + "layer_norm.bias"])


def txl_forward(cfg, P, tokens, mems):
    """tokens (qlen, B) long, mems: L+1 tensors (mlen, B, d) -> hidden (qlen, B, d), new mems."""
    qlen, B = tokens.shape
    d = cfg["d_model"]
    mlen = mems[0].size(0)
    klen = mlen + qlen
    core_out = P["word_emb.weight"][tokens] * d ** 0.5
    pos_emb = positional_embedding(cfg, klen, core_out.device)
    hids = [core_out]
    for l in range(cfg["layers"]):
        core_out = ff_layer(P, l, attention_layer(cfg, P, l, core_out, pos_emb, mems[l]))
        hids.append(core_out)
    # _update_mems with ext_len = 0
    end_idx = mlen + qlen
    beg_idx = max(0, end_idx - cfg["mem_len"])
    new_mems = [torch.cat([m, h], 0)[beg_idx:end_idx].detach() for m, h in zip(mems, hids)]
    return core_out, new_mems


def full_softmax(cfg, P, hidden, targets):
    logits = hidden @ P["word_emb.weight"].T + P["out_bias"]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg["vocab"]), targets.reshape(-1))
    return logits, loss


def adaptive_softmax(cfg, P, hidden, targets):
    """The official ProjectedAdaptiveLogSoftmax with div_val 1 and tied weights -> mean NLL."""
    hidden = hidden.reshape(-1, cfg["d_model"])
    target = targets.reshape(-1)
    E, b = P["word_emb.weight"], P["out_bias"]
    cutoff_values = [0] + cfg["cutoffs"] + [cfg["vocab"]]
    head_weight = torch.cat([E[: cutoff_values[1]], P["cluster_weight"]], 0)
    head_bias = torch.cat([b[: cutoff_values[1]], P["cluster_bias"]], 0)
    head_logprob = torch.log_softmax(hidden @ head_weight.T + head_bias, dim=1)
    nll = []
    for i in range(len(cutoff_values) - 1):
        l_idx, r_idx = cutoff_values[i], cutoff_values[i + 1]
        indices_i = ((target >= l_idx) & (target < r_idx)).nonzero().squeeze(1)
        if indices_i.numel() == 0:
            continue
        target_i = target.index_select(0, indices_i) - l_idx
        head_logprob_i = head_logprob.index_select(0, indices_i)
        if i == 0:
            logprob_i = head_logprob_i.gather(1, target_i[:, None]).squeeze(1)
        else:
            hidden_i = hidden.index_select(0, indices_i)
            tail_logprob_i = torch.log_softmax(hidden_i @ E[l_idx:r_idx].T + b[l_idx:r_idx], dim=1)
            logprob_i = head_logprob_i[:, -i] + tail_logprob_i.gather(1, target_i[:, None]).squeeze(1)
        nll.append(-logprob_i)
    return None, torch.cat(nll).mean()


# ---- fixtures ----

def make_fixture(name, cfg, seed, out_dir):
    g = torch.Generator().manual_seed(seed)
    params = random_fixture_parameters(parameter_shapes(cfg), g, "layer_norm.weight")
    qlen, B, d = cfg["tgt_len"], cfg["batch"], cfg["d_model"]
    mems = [torch.zeros(0, B, d) for _ in range(cfg["layers"] + 1)]
    tensors, total = {}, 0
    for segment in range(1, cfg["segments"] + 1):
        tokens = torch.randint(0, cfg["vocab"], (qlen, B), generator=g)
        targets = torch.randint(0, cfg["vocab"], (qlen, B), generator=g)
        hidden, mems = txl_forward(cfg, params, tokens, mems)
        if cfg["cutoffs"]:
            logits, loss = adaptive_softmax(cfg, params, hidden, targets)
        else:
            logits, loss = full_softmax(cfg, params, hidden, targets)
            tensors[f"output.logits{segment}"] = logits
        tensors[f"input.tokens{segment}"] = tokens
        tensors[f"input.targets{segment}"] = targets
        tensors[f"output.loss{segment}"] = loss.reshape(())
        total = total + loss
    total.backward()
    store_parameters_and_gradients(tensors, params)
    meta = {k: v for k, v in cfg.items() if k != "cutoffs"}
    meta["urpe"] = int(cfg["urpe"])
    meta["same_length"] = int(cfg["same_length"])
    meta["alibi"] = int(cfg["alibi"])
    meta["cutoffs"] = ",".join(str(c) for c in cfg["cutoffs"])
    meta["fixture_version"] = FIXTURE_VERSION
    meta["torch_version"] = torch.__version__
    path = os.path.join(out_dir, f"txl_{name}.safetensors")
    save_safetensors(path, tensors, meta)
    print(f"wrote txl_{name}.safetensors ({os.path.getsize(path)} bytes): "
          "losses " + " ".join(f"{tensors[f'output.loss{s}'].item():.6f}" for s in range(1, cfg["segments"] + 1)))


BASE = {"vocab": 13, "layers": 2, "d_model": 8, "heads": 2, "d_head": 4, "d_inner": 16,
        "tgt_len": 5, "mem_len": 5, "clamp_len": -1, "max_klen": 10, "batch": 2, "urpe": False,
        "cutoffs": [], "same_length": False, "segments": 2, "alibi": False}
FIXTURES = {
    "base": dict(BASE),
    "urpe": dict(BASE, urpe=True, d_head=3, clamp_len=7, max_klen=7),
    "adaptive": dict(BASE, cutoffs=[5, 9]),
    # evaluation-style settings (docs/transformer_xl.md#evaluation-protocol): a memory longer than
    # a segment, clamped distances,
    # same_length; three segments so the memory fills up (mlen 0, 5, 7)
    "urpe_eval": dict(BASE, urpe=True, same_length=True, clamp_len=3, mem_len=7, max_klen=12, segments=3),
    # ALiBi (docs/transformer_xl.md#alibi-variant): 3 heads take the slopes of 2 plus one of 4
    "alibi": dict(BASE, alibi=True, heads=3),
    "alibi_urpe_eval": dict(BASE, alibi=True, heads=3, urpe=True, same_length=True, clamp_len=3, mem_len=7,
                            max_klen=12, segments=3),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
    ap.add_argument("--only", default="", help="comma-separated fixture names to write (default: all)")
    args = ap.parse_args()
    only = [n for n in args.only.split(",") if n]
    unknown = [n for n in only if n not in FIXTURES]
    if unknown:
        ap.error(f"--only: unknown fixture {unknown[0]}; expected some of {', '.join(FIXTURES)}")
    torch.set_default_dtype(torch.float64)
    out_dir = os.path.normpath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    for i, (name, cfg) in enumerate(FIXTURES.items()):  # the seed follows the position: append new ones
        if not only or name in only:
            make_fixture(name, cfg, 200 + i, out_dir)


if __name__ == "__main__":
    main()
