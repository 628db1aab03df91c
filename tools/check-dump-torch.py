#!/usr/bin/env python3
"""An outside check of a minictx attention-mode dump: the attention rebuilt in PyTorch
fp64 from the dump's arrays and attributes alone, its gradients by autograd.

  tools/check-dump-torch.py DUMP.h5 [--tolerance 1e-9]

DUMP.h5 is `minictx verify --dump` of a point with run.mode attention. From the
attributes: GQA (query head h uses KV head h / (heads / kv_heads)), the causal mask by
global position, packed documents (inputs/document_ids), the sliding window
(window_per_layer: the query at position i sees keys j with i − j < w, and j − i < w too
without the causal mask), the sinks (inputs/sinks: e^s_h joins head h's softmax
denominator once per row) and head_dim_v (v and o). The loss is sum(inputs/dout · o), as
the dump's `loss` attribute says. Compares o, lse and the gradients of q, k, v and the
sinks with the dump's fp64 reference (reference/...) to --tolerance relative to each
tensor's largest value, and prints the app's own error against PyTorch beside them.

Exit 0 when PyTorch agrees with the reference, 1 when not, 77 when PyTorch is not
installed (ctest counts that as skipped). Needs h5py and numpy; PyTorch on the CPU.
"""
import argparse
import sys

import h5py
import numpy as np

SKIPPED = 77


def layer_window(text):
    """The first layer's window (attention mode runs one attention); 0: none."""
    items = text[text.index("[") + 1:text.index("]")].split(",") if text.startswith("{") else [text]
    first = items[0].strip()
    return 0 if first == "global" else int(first)


def torch_attention(torch, f, a):
    """o [b, s, h, dv], lse [b, s, h] and the gradients of sum(dout · o) by autograd."""
    h, kv = int(a["heads"]), int(a["kv_heads"])
    causal = int(a["causal"]) == 1
    window = layer_window(a["window_per_layer"]) if "window_per_layer" in a else 0

    def tensor(name):
        return torch.from_numpy(np.asarray(f[name][:], dtype=np.float64)).requires_grad_()
    q, k, v = tensor("inputs/q"), tensor("inputs/k"), tensor("inputs/v")
    dout = torch.from_numpy(np.asarray(f["inputs/dout"][:], dtype=np.float64))
    sinks = tensor("inputs/sinks") if "inputs/sinks" in f else None
    b, s, _, d = q.shape
    docs = torch.from_numpy(np.asarray(f["inputs/document_ids"][:])) if "inputs/document_ids" in f \
        else torch.zeros(b, s, dtype=torch.int64)
    pos = torch.arange(s)
    visible = docs[:, :, None] == docs[:, None, :]  # [b, query, key]
    if causal:
        visible = visible & (pos[None, :, None] >= pos[None, None, :])
    if window > 0:
        visible = visible & ((pos[:, None] - pos[None, :]).abs() < window)[None]
    kh, vh = k.repeat_interleave(h // kv, dim=2), v.repeat_interleave(h // kv, dim=2)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, kh) / d ** 0.5
    scores = scores.masked_fill(~visible[:, None], float("-inf"))
    if sinks is not None:  # one more column per row: the sink, whose value is zero
        scores = torch.cat([scores, sinks.view(1, h, 1, 1).expand(b, h, s, 1)], dim=-1)
    lse = torch.logsumexp(scores, dim=-1)  # [b, h, s]
    p = torch.exp(scores - lse[..., None])
    if sinks is not None:
        p = p[..., :-1]
    o = torch.einsum("bhqk,bkhd->bqhd", p, vh)
    (o * dout).sum().backward()
    out = {"outputs/o": o, "outputs/lse": lse.permute(0, 2, 1), "grads/q": q.grad, "grads/k": k.grad,
           "grads/v": v.grad}
    if sinks is not None:
        out["grads/sinks"] = sinks.grad
    return {name: t.detach().numpy() for name, t in out.items()}


def relative(got, ref):
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-300))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump")
    ap.add_argument("--tolerance", type=float, default=1e-9)
    args = ap.parse_args()
    try:
        import torch  # imported here so that a machine without PyTorch skips
    except ImportError:
        print("skipped: PyTorch is not installed")
        return SKIPPED
    with h5py.File(args.dump, "r") as f:
        a = f.attrs
        if a["mode"] != "attention":
            print(f"{args.dump}: a dump of run.mode {a['mode']}; this check reads attention mode's")
            return 1
        mine = torch_attention(torch, f, a)
        ok = True
        for name, value in mine.items():
            ref, app = f["reference/" + name][:], f[name][:]
            err = relative(value, ref)
            ok = ok and value.shape == ref.shape and err <= args.tolerance
            print(f"{name}: torch fp64 vs minictx's reference {err:.2e}, minictx ({a['backend']}) vs torch "
                  f"{relative(app, value):.2e}")
    print("torch fp64 agrees with the reference" if ok else "torch fp64 differs from the reference")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
