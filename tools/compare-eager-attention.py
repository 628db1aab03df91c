#!/usr/bin/env python3
"""minictx's attention beside eager fp32 attention, both against verify's fp64 reference.

  tools/compare-eager-attention.py DUMP.h5 [--engine auto|torch|numpy] [--max-ratio R]

DUMP.h5 is an attention-mode `minictx verify --dump` file: the global inputs q, k, v, dout,
minictx's outputs and gradients, and under reference/ the fp64 reference's. The tool runs
the textbook attention of an eager framework on the same inputs in float32: scores
q kᵀ / sqrt(head_dim) materialised, masked (causal by position, packed documents from
inputs/document_ids), softmax (max subtracted, exp, sum, divide), o = P v; and the
backward autograd would run: dV = Pᵀ dO, dP = dO vᵀ, dS = P ∘ (dP − rowsum(dP ∘ P)),
dQ = dS k / sqrt(head_dim), dK = dSᵀ q / sqrt(head_dim), summed over a GQA group.

--engine torch runs it with PyTorch on the CPU (torch.float32 tensors, autograd for the
backward); numpy runs the same formulas in numpy.float32 (its matmul is the same sgemm);
auto (the default) takes torch where it imports. For o, dQ, dK and dV the table gives
max |x − ref| / max |ref| (verify's measure) of minictx and of the eager run, and their
ratio. With --max-ratio the tool exits 1 when a ratio exceeds R. Needs h5py and numpy.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import system_python  # noqa: E402

system_python.require("h5py", "numpy")
import h5py  # noqa: E402
import numpy as np  # noqa: E402

TENSORS = [("o", "outputs/o"), ("dQ", "grads/q"), ("dK", "grads/k"), ("dV", "grads/v")]


def visible(f, batch, seq):
    """[batch, seq, seq] bool: key j visible to query i."""
    causal = bool(f.attrs["causal"])
    mask = np.ones((batch, seq, seq), dtype=bool)
    if causal:
        mask &= np.tril(np.ones((seq, seq), dtype=bool))[None]
    if "inputs/document_ids" in f:
        ids = np.asarray(f["inputs/document_ids"])
        mask &= ids[:, :, None] == ids[:, None, :]
    return mask


def eager_numpy(q, k, v, dout, mask):
    """o, dq, dk, dv of [B, H, S, D] float32 inputs (k, v already repeated over the group)."""
    scale = np.float32(1.0 / math.sqrt(q.shape[-1]))
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    s = np.where(mask[:, None], s, np.float32(-np.inf))
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    o = np.matmul(p, v)
    dv = np.matmul(np.swapaxes(p, -1, -2), dout)
    dp = np.matmul(dout, np.swapaxes(v, -1, -2))
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    dq = np.matmul(ds, k) * scale
    dk = np.matmul(np.swapaxes(ds, -1, -2), q) * scale
    return o, dq, dk, dv


def eager_torch(q, k, v, dout, mask):
    import torch

    t = [torch.from_numpy(x).requires_grad_(True) for x in (q, k, v)]
    s = torch.matmul(t[0], t[1].transpose(-1, -2)) / math.sqrt(q.shape[-1])
    s = s.masked_fill(~torch.from_numpy(mask)[:, None], float("-inf"))
    o = torch.matmul(torch.softmax(s, dim=-1), t[2])
    o.backward(torch.from_numpy(dout))
    return tuple(x.detach().numpy() for x in (o, t[0].grad, t[1].grad, t[2].grad))


def run_eager(f, engine):
    """The eager run's o, dq, dk, dv in the dump's [B, S, heads, D] layout."""
    heads, kv_heads = int(f.attrs["heads"]), int(f.attrs["kv_heads"])
    group = heads // kv_heads
    # [B, S, heads, D] → [B, heads, S, D]; k, v repeated over each query head's group.
    def heads_first(name, repeat=1):
        x = np.asarray(f[name], dtype=np.float32).transpose(0, 2, 1, 3)
        return np.ascontiguousarray(np.repeat(x, repeat, axis=1))
    q, dout = heads_first("inputs/q"), heads_first("inputs/dout")
    k, v = heads_first("inputs/k", group), heads_first("inputs/v", group)
    mask = visible(f, q.shape[0], q.shape[2])
    o, dq, dk, dv = (eager_torch if engine == "torch" else eager_numpy)(q, k, v, dout, mask)

    def back(x, fold=1):  # [B, heads, S, D] → [B, S, heads/fold, D], a group's heads summed
        b, h, s, d = x.shape
        return x.astype(np.float64).reshape(b, h // fold, fold, s, d).sum(axis=2).transpose(0, 2, 1, 3)
    return {"outputs/o": back(o), "grads/q": back(dq), "grads/k": back(dk, group), "grads/v": back(dv, group)}


def rel_err(x, ref):
    x, ref = np.asarray(x, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return float(np.abs(x - ref).max() / np.abs(ref).max())


def pick_engine(wanted):
    if wanted != "auto":
        return wanted
    try:
        import torch  # noqa: F401
        return "torch"
    except ImportError:
        return "numpy"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump", help="an attention-mode `minictx verify --dump` file")
    ap.add_argument("--engine", choices=["auto", "torch", "numpy"], default="auto")
    ap.add_argument("--max-ratio", type=float, help="exit 1 when minictx / eager exceeds this on a tensor")
    args = ap.parse_args()
    engine = pick_engine(args.engine)
    if not os.path.isfile(args.dump):
        sys.exit(f"compare-eager-attention.py: error: no file {args.dump}")
    with h5py.File(args.dump, "r") as f:
        if f.attrs.get("mode", b"") not in ("attention", b"attention"):
            sys.exit(f"compare-eager-attention.py: error: {args.dump} is not an attention-mode verify dump")
        eager = run_eager(f, engine)
        rows = [(label, rel_err(f[name], f["reference/" + name]), rel_err(eager[name], f["reference/" + name]))
                for label, name in TENSORS]
        where = (f"input_scale {f.attrs['input_scale']:g}, {int(f.attrs['seq_len'])} tokens, "
                 f"head_dim {int(f.attrs['head_dim'])}, backend {f.attrs['backend']}")
    label = "torch" if engine == "torch" else "numpy"
    print(f"# max rel err against fp64; eager fp32 by {label}; {where}")
    print(f"| tensor | minictx | eager fp32 ({label}) | minictx / eager |")
    print("| :-: | :-: | :-: | :-: |")
    worst = 0.0
    for name, mine, theirs in rows:
        ratio = mine / theirs if theirs > 0 else math.inf
        worst = max(worst, ratio)
        print(f"| {name} | {mine:.3g} | {theirs:.3g} | {ratio:.2f} |")
    if args.max_ratio is not None and worst > args.max_ratio:
        print(f"compare-eager-attention.py: minictx is {worst:.2f} times eager fp32's error, "
              f"over --max-ratio {args.max_ratio:g}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
