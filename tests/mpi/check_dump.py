#!/usr/bin/env python3
"""`minictx verify --dump`: the file holds the global inputs, weights, outputs and
gradients with the reference beside them, each in its natural shape, readable with h5py
one line per dataset; it describes itself (the resolved deck and the model's conventions
as attributes), so a layer written from the attributes alone reproduces its outputs (the
recipe of docs/user-guide.md, "The program", run here with numpy), with packed documents
too (from inputs/document_ids), sliding windows per layer, attention sinks and a value
head dim of its own (window_per_layer, weights/layer<l>/sinks, head_dim_v), and the LM
head's loss and weight gradient from its labels and weight; a bf16 attention-mode dump
holds the inputs as the run had them, bf16 values, from which attention in fp64
reproduces the reference; and a second dump to the same name is refused without touching
the first."""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

minictx, mpiexec = sys.argv[1], sys.argv[2]


def rms_norm(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def rope(x, theta, pos):  # x [b, s, h, d], half-split pairs (i, i + d/2), pos [b, s]
    d = x.shape[-1]
    angle = pos[:, :, None] * theta ** (-2.0 * np.arange(d // 2) / d)
    c, s = np.cos(angle)[:, :, None, :], np.sin(angle)[:, :, None, :]
    lo, hi = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([lo * c - hi * s, lo * s + hi * c], -1)


def layer_windows(a):
    """Each layer's sliding window (0: none) from window_per_layer, repeated over the layers."""
    text = a["window_per_layer"] if "window_per_layer" in a else "global"
    items = text[text.index("[") + 1:text.index("]")].split(",") if text.startswith("{") else [text]
    pattern = [0 if w.strip() == "global" else int(w) for w in items]
    return [pattern[layer % len(pattern)] for layer in range(int(a["layers"]))]


def my_llama_layer(x, w, a, docs, window):
    """A user's own layer, written from the dump's attributes only; docs [b, s]: each
    token's document (one per sequence without packed documents); window: the layer's."""
    b, s, _ = x.shape
    H, KV, D, DV = int(a["heads"]), int(a["kv_heads"]), int(a["head_dim"]), int(a["head_dim_v"])
    idx = np.arange(s)
    start = np.array([[idx[row == row[t]].min() for t in idx] for row in docs])  # each token's document start
    pos = idx[None, :] - start  # RoPE restarts at each document
    n = rms_norm(x, w["g_attn"], a["rms_eps"])
    q = rope((n @ w["wq"]).reshape(b, s, H, D), a["rope_theta"], pos)
    k = np.repeat(rope((n @ w["wk"]).reshape(b, s, KV, D), a["rope_theta"], pos), H // KV, axis=2)
    v = np.repeat((n @ w["wv"]).reshape(b, s, KV, DV), H // KV, axis=2)
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(D)
    visible = docs[:, None, :, None] == docs[:, None, None, :]
    if a["causal"]:
        visible = visible & np.tril(np.ones((s, s), bool))
    if window:  # by global position, not RoPE's
        visible = visible & (np.abs(idx[:, None] - idx[None, :]) < window)
    scores = np.where(visible, scores, -np.inf)
    # A sink is one more logit per row whose value is zero: it joins the denominator only.
    sink = w["sinks"][None, :, None, None] if "sinks" in w else np.full((1, H, 1, 1), -np.inf)
    top = np.maximum(scores.max(-1, keepdims=True), sink)
    p = np.exp(scores - top)
    p = p / (p.sum(-1, keepdims=True) + np.exp(sink - top))
    o = np.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, H * DV)
    h = x + o @ w["wo"]
    m = rms_norm(h, w["g_mlp"], a["rms_eps"])
    g = m @ w["w1"]
    return h + (g / (1 + np.exp(-g)) * (m @ w["w3"])) @ w["w2"]


def own_layers(f, a):
    """The dump's model rebuilt from its inputs, weights and attributes: y and the loss."""
    x = f["inputs/x"][:]
    docs = f["inputs/document_ids"][:] if "inputs/document_ids" in f else np.zeros(x.shape[:2])
    for l, window in enumerate(layer_windows(a)):
        w = {k: v[:] for k, v in f[f"weights/layer{l}"].items()}
        x = my_llama_layer(x, w, a, docs, window)
    if "weights/lm_head" not in f:
        return x, (f["inputs/loss_weights"][:] * x).sum() / (a["batch"] * a["seq_len"])
    z = x @ f["weights/lm_head"][:]  # the LM head's logits [b, s, vocab]
    top = z.max(-1, keepdims=True)
    lse = (top + np.log(np.exp(z - top).sum(-1, keepdims=True)))[..., 0]
    picked = np.take_along_axis(z, f["inputs/labels"][:].astype(int)[..., None], -1)[..., 0]
    return x, (lse - picked).mean()


def head_grad(f, y):
    """dL/dW_head of the mean cross-entropy, from y and the dump's labels."""
    z = y @ f["weights/lm_head"][:]
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    labels = f["inputs/labels"][:].astype(int)
    np.put_along_axis(p, labels[..., None], np.take_along_axis(p, labels[..., None], -1) - 1, -1)
    return np.einsum("bsd,bsv->dv", y, p) / labels.size


def is_bf16(x):
    return not (np.asarray(x, np.float32).view(np.uint32) & 0xFFFF).any()


def my_attention(q, k, v, causal):
    """softmax(q kᵀ / √D) v with GQA, [b, s, heads, D], in fp64."""
    k, v = (np.repeat(t, q.shape[2] // t.shape[2], axis=2) for t in (k, v))
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return np.einsum("bhqk,bkhd->bqhd", p / p.sum(-1, keepdims=True), v)


with tempfile.TemporaryDirectory() as tmp:
    # Attention mode in bf16 on two ranks: the inputs are the bf16 values every backend
    # and the reference computed on, so a model of one's own reproduces the reference.
    path = os.path.join(tmp, "attention.h5")
    run = subprocess.run([mpiexec, "-n", "2", minictx, "verify", "--set", "run.mode=attention", "--set",
                          "sequence.length=24", "--set", "run.dtype=bf16", "--set", "attention.backend=ring",
                          "--dump", path], capture_output=True, text=True)
    assert run.returncode == 0 and "VALID" in run.stdout, run.stdout + run.stderr
    with h5py.File(path, "r") as f:
        q, k, v = (f[f"inputs/{t}"][:] for t in "qkv")
        assert all(is_bf16(t) for t in (q, k, v, f["inputs/dout"][:])), "inputs not in bf16"
        assert is_bf16(f["outputs/o"][:]) and is_bf16(f["grads/k"][:]), "outputs not in bf16"
        o_ref = f["reference/outputs/o"][:]
        err = np.abs(my_attention(q, k, v, f.attrs["causal"]) - o_ref).max() / np.abs(o_ref).max()
        print(f"own attention on the bf16 dump's inputs: max rel err {err:.2e}")
        assert err < 1e-12, err

    # Packed documents: two ranks of a zigzag ring, batch rows packed differently; with a
    # sliding window on the first layer, sinks and a value head dim of 48 beside 32.
    path = os.path.join(tmp, "documents.h5")
    run = subprocess.run([mpiexec, "-n", "2", minictx, "verify", "--set", "sequence.length=37", "--set",
                          "sequence.batch=2", "--set", "attention.backend=ring", "--set",
                          "attention.ring_type=zigzag", "--set", "sequence.documents={rows: [[5, 1, 31], [20, 17]]}",
                          "--set", "attention.window={layers: [6, global]}", "--set", "attention.sinks=true",
                          "--set", "model.head_dim_v=48", "--dump", path], capture_output=True, text=True)
    assert run.returncode == 0 and "VALID" in run.stdout, run.stdout + run.stderr
    with h5py.File(path, "r") as f:
        a = f.attrs
        assert f["inputs/document_ids"][0, 4:7].tolist() == [0, 1, 2], f["inputs/document_ids"][:]
        assert a["document_lengths"] == "{rows: [[5, 1, 31], [20, 17]]}" and a["documents"], dict(a)
        assert "index in its document" in a["rope"], a["rope"]  # the attribute says RoPE restarts
        assert a["window_per_layer"] == "{layers: [6, global]}" and a["window"] and a["sinks"], dict(a)
        assert f["weights/layer1/sinks"].shape == (8,) and f["weights/layer0/wv"].shape == (256, 4 * 48)
        y_ref = f["reference/outputs/y"][:]
        y, loss = own_layers(f, a)
        err = np.abs(y - y_ref).max() / np.abs(y_ref).max()
        print(f"own layer with documents, a window, sinks and head_dim_v from the attributes: max rel err {err:.2e}")
        assert err < 1e-10, err
        assert abs(loss - f["reference/outputs/loss"][0]) <= 1e-10 * abs(loss), loss

    # The LM head (model.vocab): the labels and the head's weight in the dump, the loss and
    # the head's weight gradient reproduced with numpy; a balanced ring of 3 ranks, with a
    # window, sinks and MLA value heads.
    path = os.path.join(tmp, "head.h5")
    run = subprocess.run([mpiexec, "-n", "3", minictx, "verify", "--set", "sequence.length=37", "--set",
                          "model.vocab=50", "--set", "attention.backend=ring", "--set", "attention.ring_type=balanced",
                          "--set", "sequence.documents=[5, 1, 31]", "--set", "attention.window=9", "--set",
                          "attention.sinks=true", "--set", "model.head_dim_v=48", "--dump", path],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "VALID" in run.stdout, run.stdout + run.stderr
    with h5py.File(path, "r") as f:
        a = f.attrs
        assert a["vocab"] == 50 and "cross_entropy" in a["loss"], dict(a)
        assert f["weights/lm_head"].shape == (256, 50) and f["inputs/labels"].shape == (1, 37)
        y, loss = own_layers(f, a)
        assert abs(loss - f["reference/outputs/loss"][0]) <= 1e-10 * abs(loss), loss
        grad, ref = head_grad(f, y), f["reference/grads/lm_head"][:]
        err = np.abs(grad - ref).max() / np.abs(ref).max()
        print(f"LM head from the dump: loss {loss:.9g}, head gradient max rel err {err:.2e}")
        assert err < 1e-10, err

    path = os.path.join(tmp, "dump.h5")
    args = [minictx, "verify", "--set", "sequence.length=37", "--set", "sequence.batch=2", "--dump", path]
    run = subprocess.run(args, capture_output=True, text=True)
    assert run.returncode == 0 and "VALID" in run.stdout, run.stdout + run.stderr
    with h5py.File(path, "r") as f:
        a = f.attrs
        assert f["inputs/x"].shape == (2, 37, 256), f["inputs/x"].shape
        # Every weight has its natural shape, the shape of its gradient.
        for layer in ("layer0", "layer1"):
            for name, grad in f["grads/" + layer].items():
                assert f[f"weights/{layer}/{name}"].shape == grad.shape, (layer, name)
        assert f["weights/layer1/wq"].shape == (256, 256)
        assert f["weights/layer0/w2"].shape == (688, 256)
        y, y_ref = f["outputs/y"][:], f["reference/outputs/y"][:]
        assert y.shape == (2, 37, 256)
        assert np.abs(y - y_ref).max() / np.abs(y_ref).max() < 1e-4
        assert f["grads/layer0/w2"].shape == (688, 256)
        assert f["outputs/loss"][0] == f["outputs/loss"][0]  # finite, not NaN

        # Self-described: the deck and the conventions are attributes.
        assert "sequence:\n  length: 37\n  batch: 2" in a["deck"], a["deck"]
        for key in ("rope", "loss", "weights", "attention", "rms_norm", "layer"):
            assert a[key], key
        assert (a["heads"], a["kv_heads"], a["head_dim"], a["causal"]) == (8, 4, 32, 1)

        # The user guide's recipe: a layer written from the attributes reproduces the outputs
        # and the loss (fp64 here, so to the reference's own accuracy).
        assert "inputs/document_ids" not in f and "index in the sequence" in a["rope"], a["rope"]
        x, loss = own_layers(f, a)
        err = np.abs(x - y_ref).max() / np.abs(y_ref).max()
        print(f"own layer from the attributes: max rel err {err:.2e}; loss {loss:.9g} vs {f['reference/outputs/loss'][0]:.9g}")
        assert err < 1e-10, err
        assert abs(loss - f["reference/outputs/loss"][0]) <= 1e-10 * abs(loss), loss
    before = os.path.getmtime(path)
    again = subprocess.run(args, capture_output=True, text=True)
    assert again.returncode != 0 and "file exists" in again.stderr, again.stderr
    assert os.path.getmtime(path) == before
print("dump ok")
