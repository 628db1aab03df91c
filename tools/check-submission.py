#!/usr/bin/env python3
"""An independent check of a minictx benchmark submission (docs/benchmark.md, "A centre's
spot-check"): reads the results files with h5py and numpy alone, shares no code
with minictx, and believes nothing a file says about itself. For every class point it
recomputes each figure from the per-iteration, per-rank times and the resolved deck's
shape, re-derives the verdict from the per-tensor errors against the dtype's tolerance,
checks the labels, the deck as given and the SHA-256 digests; then it applies the run rules
(the class decks resolved in inputs/benchmark/resolved/, the allowed deviations, an fp64
verification of the same configuration, three independent launches per class).

  tools/check-submission.py FILE.h5... [--json OUT.json] [--classes DIR]

Prints one line per class, run and finding, and exits as `minictx report --submission`
does: 0 compliant, 4 unverified, 5 non-compliant, 6 inconsistent, 2 bad input. --json
writes the assessment in the layout of `report --submission --json`."""
import argparse
import hashlib
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from system_python import require  # noqa: E402

require("h5py", "numpy")
import h5py  # noqa: E402
import numpy as np  # noqa: E402

STATUSES = ["compliant", "unverified", "non-compliant", "inconsistent"]
EXIT = {"compliant": 0, "unverified": 4, "non-compliant": 5, "inconsistent": 6}
REQUIRED_LAUNCHES = 3
SPREAD_BOUND = 0.05
RECOMPUTE_TOLERANCE = 1e-9
PHASES = ["forward", "backward", "gemm_fwd", "gemm_bwd", "attention_fwd", "attention_bwd", "recompute", "grad_allreduce",
          "grad_check"]
WEIGHTS = ["g_attn", "wq", "wk", "wv", "wo", "g_mlp", "w1", "w3", "w2"]
BUILD_KEYS = ["version", "git_sha", "git_dirty", "compiler", "cxx_flags", "build_type", "mpi_version", "gpu_name",
              "binary_sha256"]

# The run rules (docs/benchmark.md): the first entry that matches a key decides; a key
# ending in "." names a section. A key no entry names is not allowed.
RULES = [
    ("model.", False), ("sequence.length", False), ("sequence.batch", False), ("attention.causal", False),
    ("run.dtype", False), ("run.mode", False), ("run.fwd_only", False), ("run.input_scale", False),
    ("benchmark.class", False), ("benchmark.verify_length", False), ("benchmark.verify_layers", False),
    ("benchmark.role", True), ("attention.backend", True), ("attention.ring_type", True),
    ("attention.ulysses_degree", True), ("attention.ring_degree", True), ("attention.window_size", True),
    ("attention.intra", True), ("attention.bwd_comm", True), ("attention.block_q", True),
    ("attention.block_k", True), ("run.checkpointing", True), ("run.grad_reduce", True), ("run.device", True),
    ("run.comm", True), ("run.", True), ("topology.", True), ("machine.", True), ("output.", True),
]
VERIFICATION_MAY_DIFFER = {"sequence.length", "model.layers", "run.verify", "run.reference", "run.iters",
                           "run.warmup", "run.watchdog_seconds", "run.ring_timeline", "benchmark.role"}


def allowed(key):
    for rule, ok in RULES:
        if (key.startswith(rule) if rule.endswith(".") else key == rule):
            return ok
    return False


def verification_may_differ(key):
    return key in VERIFICATION_MAY_DIFFER or key.startswith("output.") or key.startswith("machine.")


def outside_configuration(key):
    return key.startswith("output.") or key.startswith("machine.")


# ---- a resolved deck: "section:" lines, then "  key: value" lines --------------------------

def scalar(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return json.loads(text)
    if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def parse_deck(text):
    """{"section.key": value text} of a deck minictx wrote (comments skipped); ValueError
    for anything else."""
    keys, section = {}, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            if not line.endswith(":"):
                raise ValueError(f"not a section line: {line!r}")
            section = line[:-1]
            continue
        name, sep, value = line.strip().partition(":")
        if section is None or not sep:
            raise ValueError(f"not a key line: {line!r}")
        keys[f"{section}.{name}"] = scalar(value)
    return keys


def differences(old, new, ignore=()):
    """[(key, old, new)] over both decks' keys, new's order first."""
    out = []
    for key, value in new.items():
        if key.split(".")[0] in ignore:
            continue
        if old.get(key) != value:
            out.append((key, old.get(key, "(absent)"), value))
    out += [(k, v, "(absent)") for k, v in old.items() if k.split(".")[0] not in ignore and k not in new]
    return out


# ---- digests (outputs/README.md, "Digests") ------------------------------------------------

def token(data):
    return str(len(data)).encode() + b":" + data


def float_text(x):
    x = float(x)
    if math.isnan(x):
        return b"7ff8000000000000"
    return format(struct.unpack("<Q", struct.pack("<d", x))[0], "016x").encode()


def text_bytes(v):
    if isinstance(v, bytes):
        return v
    return str(v).encode("utf-8", "surrogateescape")


def entry(path, dtype, shape, values):
    if h5py.check_string_dtype(dtype) is not None or dtype.kind in "OSU":
        kind, encode = b"str", text_bytes
    elif dtype.kind in "iub":
        kind, encode = b"int", lambda v: str(int(v)).encode()
    elif dtype.kind == "f":
        kind, encode = b"float", float_text
    else:
        raise ValueError(f"{path}: a value of type {dtype} has no digest form")
    body = b"".join(token(encode(v)) for v in values)
    return path.encode(), token(kind) + token("x".join(str(d) for d in shape).encode()) + body


def canonical(group, skip):
    """Every attribute ("PATH@NAME") and dataset ("PATH") of the group and below; the
    `unit` attributes and the group's own attributes named in `skip` left out."""
    entries = []

    def attributes(obj, prefix, skipped):
        for name in obj.attrs:
            if name == "unit" or name in skipped:
                continue
            attr = obj.attrs.get_id(name)
            value = obj.attrs[name]
            values = [value] if attr.shape == () else list(np.asarray(value).ravel())
            entries.append(entry(f"{prefix}@{name}", attr.dtype, attr.shape, values))

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            entries.append(entry(name, obj.dtype, obj.shape, list(obj[()].ravel()) if obj.size else []))
        attributes(obj, name, ())

    attributes(group, "", skip)
    group.visititems(visit)
    return b"".join(token(path) + rest + b"\n" for path, rest in sorted(entries))


def sha256(tag, data):
    return hashlib.sha256(tag + data).hexdigest()


def provenance_digest(f):
    return sha256(b"minictx provenance digest v1\n", canonical(f["provenance"], ()))


def point_digest(g, prov_digest):
    body = canonical(g, ("index", "digest", "provenance_digest"))
    return sha256(b"minictx point digest v1\n", body + token(prov_digest.encode()))


# ---- reading -------------------------------------------------------------------------------

def as_text(v):
    return v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v)


class Point:
    def __init__(self, path, name, g, prov, prov_digest):
        self.path, self.name, self.where = path, name, f"{path}:{name}"
        a = g.attrs
        self.deck, self.verdict, self.reference = as_text(a["deck"]), as_text(a["verdict"]), as_text(a["reference"])
        self.skipped = as_text(a["skipped_reason"])
        self.iters, self.ranks = int(a["iters"]), int(a["ranks"])
        self.digest = as_text(a["digest"]) if "digest" in a else ""
        self.provenance_digest = as_text(a["provenance_digest"]) if "provenance_digest" in a else ""
        self.labels = {k: as_text(v) for k, v in g["labels"].attrs.items()}
        self.metrics = {k: float(v) for k, v in g["metrics"].attrs.items()}
        self.iter_seconds = np.asarray(g["iter_seconds"][()], dtype=float)
        # The format's rule (outputs/README.md): such a point is unreadable, not a rate.
        if not np.all(np.isfinite(self.iter_seconds)) or np.any(self.iter_seconds < 0):
            raise ValueError("iter_seconds holds a negative or non-finite time")
        self.phases = {k: np.asarray(v[()], dtype=float) for k, v in g["phase_seconds"].items()}
        self.per_rank = {k: np.asarray(g[k][()], dtype=float)
                         for k in ("peak_memory_bytes", "bytes_sent_intra", "bytes_sent_inter")}
        v = g["verification"]
        self.tensors = [as_text(t) for t in v["tensor"][()]]
        self.pass_ = [int(x) for x in v["pass"][()]]
        self.max_rel = [float(x) for x in v["max_rel_err"][()]]
        self.tolerance = [float(x) for x in v["tolerance"][()]]
        self.prov = prov
        self.recomputed_digest = point_digest(g, self.provenance_digest) if self.digest else ""
        self.file_provenance_digest = prov_digest
        self.findings, self.fom, self.derived_verdict, self.keys = [], 0.0, "", None
        self.class_name, self.role = "", "measurement"

    def note(self, field, detail):
        self.findings.append({"field": field, "detail": detail})


def read_file(path):
    """(provenance dict, [Point], [unreadable lines]); OSError/KeyError/ValueError for a
    file that is not minictx results."""
    with h5py.File(path, "r") as f:
        if as_text(f.attrs.get("format", b"")) != "minictx-results":
            raise ValueError("not a minictx results file (no root attribute format = \"minictx-results\")")
        prov = {"text": {}, "numbers": {}}
        for k, v in f["provenance"].attrs.items():
            if isinstance(v, (str, bytes)):
                prov["text"][k] = as_text(v)
            else:
                prov["numbers"][k] = float(v)
        prov["hostnames"] = [as_text(h) for h in f["provenance/hostnames"][()]]
        prov_digest = provenance_digest(f)
        points, unreadable = [], []
        for name in f["points"]:
            try:
                points.append(Point(path, name, f["points"][name], prov, prov_digest))
            except (KeyError, ValueError, TypeError, OSError) as e:
                unreadable.append(f"{name} unreadable: {e}")
        return prov, points, unreadable


# ---- the audit of one point ----------------------------------------------------------------

def agrees(recorded, recomputed):
    if math.isnan(recorded) or math.isnan(recomputed):
        return False
    return abs(recorded - recomputed) <= RECOMPUTE_TOLERANCE * max(abs(recorded), abs(recomputed))


def check_digests(p):
    if not p.digest or not p.provenance_digest:
        p.note("digest", "none recorded")
        return
    if p.recomputed_digest != p.digest:
        p.note("digest", "the point's datasets or attributes changed after it was written")
    if p.file_provenance_digest != p.provenance_digest:
        p.note("provenance_digest", "the file's provenance is not the one the point was written under")


def check_given(p, deck):
    """The deck as given (provenance/deck, --set applied) against the point's: each key it
    names, after the verification role's own settings."""
    try:
        given = parse_deck(p.prov["text"].get("deck", ""))
    except ValueError as e:
        p.note("provenance/deck", f"does not parse: {e}")
        return
    if not given:
        p.note("provenance/deck", "the deck as given is not recorded")
        return
    if given.get("benchmark.role", "measurement") == "verification":
        given["sequence.length"] = given.get("benchmark.verify_length", "")
        if int(given.get("benchmark.verify_layers", "0") or 0) > 0:
            given["model.layers"] = given["benchmark.verify_layers"]
        given["run.verify"] = "true"
    for key, value in given.items():
        if key.startswith("machine.") or key.startswith("sweep.") or value.startswith("["):
            continue
        if key in deck and deck[key] != value:
            p.note("deck", f"not what the deck as given resolves to: {key} is {value} there and {deck[key]} here")
            return


def check_shape(p, deck):
    usable = True
    if p.iters != int(deck["run.iters"]):
        p.note("iters", f"recorded {p.iters}, the deck's run.iters {deck['run.iters']}")
    world = int(deck["topology.world_size"])
    if world > 0 and p.ranks != world:
        p.note("ranks", f"recorded {p.ranks}, the deck's topology.world_size {world}")
    numbers = p.prov["numbers"]
    if numbers.get("world_size") != p.ranks:
        p.note("provenance/world_size", f"recorded {numbers.get('world_size')}, the point's ranks {p.ranks}")
    per_node = int(numbers.get("ranks_per_node", 0)) or int(deck["topology.ranks_per_node"]) or 1
    nodes = (p.ranks + per_node - 1) // per_node
    if numbers.get("nodes") != nodes:
        p.note("provenance/nodes", f"recorded {numbers.get('nodes')}, {p.ranks} ranks at {per_node} per node make {nodes}")
    if p.prov["hostnames"] and len(p.prov["hostnames"]) != p.ranks:
        p.note("provenance/hostnames", f"{len(p.prov['hostnames'])} names for {p.ranks} ranks")
    t = p.iter_seconds
    if p.iters < 1 or p.ranks < 1 or t.shape != (p.iters, p.ranks):
        p.note("iter_seconds", f"shape {t.shape}, not iters x ranks = {p.iters} x {p.ranks}")
        usable = False
    elif not np.all(np.isfinite(t) & (t > 0)):
        p.note("iter_seconds", "holds a time that is not a positive number")
        usable = False
    for name, values in p.per_rank.items():
        if values.shape != (p.ranks,):
            p.note(name, f"{values.size} values for {p.ranks} ranks")
            usable = False
    for phase in PHASES:
        if phase not in p.phases or p.phases[phase].shape != (p.ranks,):
            p.note(f"phase_seconds/{phase}", "not one value per rank")
    for phase in p.phases:
        if phase not in PHASES:
            p.note(f"phase_seconds/{phase}", "not a phase a run records")
    return usable


def check_labels(p, deck):
    """The labels that are deck values as they are."""
    expected = {"backend": "attention.backend", "ring_type": "attention.ring_type", "mode": "run.mode",
                "seq_len": "sequence.length", "batch": "sequence.batch", "fwd_only": "run.fwd_only",
                "causal": "attention.causal", "dtype": "run.dtype", "device": "run.device", "comm": "run.comm",
                "heads": "model.heads", "kv_heads": "model.kv_heads", "head_dim": "model.head_dim",
                "partials": "attention.partials", "intra": "attention.intra", "bwd_comm": "attention.bwd_comm"}
    if deck["run.mode"] == "model":
        expected.update({"model": "model.preset", "layers": "model.layers", "d_model": "model.d_model",
                         "checkpointing": "run.checkpointing", "grad_reduce": "run.grad_reduce"})
    values = {label: deck[key] for label, key in expected.items()}
    values["world_size"] = str(p.ranks)
    for label, value in values.items():
        if label not in p.labels:
            p.note(f"labels/{label}", f"missing; the deck gives {value}")
        elif p.labels[label] != value:
            p.note(f"labels/{label}", f"recorded {p.labels[label]}, the deck gives {value}")


def check_device(p, deck):
    text = p.prov["text"]
    if text.get("device") != deck["run.device"]:
        p.note("provenance/device", f"recorded '{text.get('device', '')}', the deck's run.device {deck['run.device']}")
    if deck["run.device"] != "cuda":
        for key in sorted(text):
            if key.startswith("gpu_"):
                p.note(f"provenance/{key}", f"a GPU recorded for a run on device {deck['run.device']}")


def layer_windows(deck):
    """Each layer's sliding window in tokens (0: none) from attention.window: global, N or
    {layers: [N or global, ...]} repeated over the layers (absent before windows existed)."""
    text = deck.get("attention.window", "global")
    items = text[text.index("[") + 1:text.index("]")].split(",") if text.startswith("{") else [text]
    pattern = [0 if w.strip() == "global" else int(w) for w in items]
    return [pattern[layer % len(pattern)] for layer in range(int(deck["model.layers"]))]


def attention_pairs(deck, window):
    """Pairs less than `window` tokens apart (0: all), over the batch rows and documents."""
    batch, length = int(deck["sequence.batch"]), int(deck["sequence.length"])

    def pairs(n):
        return float(n * n) if window == 0 or window >= n else float((2 * window - 1) * n - window * (window - 1))
    documents = deck["sequence.documents"]
    if documents == "none":
        return batch * pairs(length)
    lengths = json.loads(documents)  # one list of lengths for every row; other forms raise
    if not all(isinstance(n, int) for n in lengths):
        raise ValueError("documents by row")
    return batch * sum(pairs(n) for n in lengths)


def value_dim(deck):
    return int(deck.get("model.head_dim_v", "0")) or int(deck["model.head_dim"])


def n_params(deck):
    d, layers, heads, head_dim = (int(deck[k]) for k in ("model.d_model", "model.layers", "model.heads",
                                                          "model.head_dim"))
    kv_heads, dv, ffn = int(deck["model.kv_heads"]), value_dim(deck), int(deck["model.ffn_hidden"])
    sinks = heads if deck.get("attention.sinks") == "true" else 0
    # The LM head's output projection (model.vocab; 0 without one) is a GEMM of the step too.
    return layers * (2 * d + d * heads * head_dim + d * kv_heads * (head_dim + dv) + heads * dv * d + 3 * d * ffn
                     + sinks) + d * int(deck.get("model.vocab", "0"))


def step_flops(deck):
    """(model, hardware, model_causal, hardware_causal): the MPT counts of one step."""
    causal, fwd_only = deck["attention.causal"] == "true", deck["run.fwd_only"] == "true"
    windows = layer_windows(deck)
    head_dim, dv = int(deck["model.head_dim"]), value_dim(deck)
    if deck["run.mode"] == "attention":
        fwd = 2.0 * attention_pairs(deck, windows[0]) * int(deck["model.heads"]) * (head_dim + dv)
        fwd /= 2 if causal else 1
        a = fwd if fwd_only else 3.5 * fwd
        return a, a, a, a
    length, batch = float(deck["sequence.length"]), int(deck["sequence.batch"])
    dense = 2.0 * n_params(deck) * length * batch
    pairs = sum(attention_pairs(deck, w) for w in windows)
    attn = 2 * 2 * int(deck["model.d_model"]) * (head_dim + dv) / (2 * head_dim) * pairs
    attn_causal = attn / 2 if causal else attn
    if fwd_only:
        return dense + attn, dense + attn, dense + attn_causal, dense + attn_causal
    ckpt = deck["run.checkpointing"]
    dense_mult = 3 if ckpt == "none" else 4
    recompute = {"full": 1.0, "selective_half": 0.5}.get(ckpt, 0.0)
    recompute_causal = 0.25 if ckpt == "selective_half" and causal else recompute
    return (3 * (dense + attn), dense_mult * dense + (3 + recompute) * attn, 3 * (dense + attn_causal),
            dense_mult * dense + (3 + recompute_causal) * attn_causal)


def recomputed_metrics(p, deck):
    ranks, iters = p.ranks, p.iters
    step = float(np.mean(np.max(p.iter_seconds, axis=1)))
    batch, tokens = int(deck["sequence.batch"]), int(deck["sequence.batch"]) * float(deck["sequence.length"])
    m = {"step_seconds": step, "iters_per_s": 1 / step, "latency_ms": step * 1e3, "tokens_per_s": tokens / step,
         "tokens_per_s_per_device": tokens / step / ranks, "sequences_per_s": batch / step,
         "peak_memory_mb": float(np.max(p.per_rank["peak_memory_bytes"])) / 2**20,
         "bytes_sent_intra_per_device": float(np.mean(p.per_rank["bytes_sent_intra"])) / max(iters, 1),
         "bytes_sent_inter_per_device": float(np.mean(p.per_rank["bytes_sent_inter"])) / max(iters, 1),
         "world_size": float(ranks)}
    if deck["run.mode"] == "model":
        m["n_params"] = float(n_params(deck))
    try:
        model, hardware, model_causal, hardware_causal = step_flops(deck)
    except (ValueError, TypeError):
        return m  # packed documents in a form this checker does not expand: rates and times only
    m.update({"model_tflop_per_step": model / 1e12, "tflops_per_device": model / step / ranks / 1e12,
              "tflops_per_device_causal": model_causal / step / ranks / 1e12})
    peak = p.metrics.get("peak_tflops_per_device", 0.0)
    if peak > 0:
        per = step * ranks * peak * 1e12
        m.update({"peak_tflops_per_device": peak, "mfu": model / per, "hfu": hardware / per,
                  "mfu_causal": model_causal / per, "hfu_causal": hardware_causal / per})
    return m


def check_metrics(p, deck):
    expected = recomputed_metrics(p, deck)
    for key, value in expected.items():
        if key not in p.metrics:
            p.note(f"metrics/{key}", f"missing; recomputed {value:.10g}")
        elif not agrees(p.metrics[key], value):
            p.note(f"metrics/{key}", f"recorded {p.metrics[key]:.10g}, recomputed {value:.10g}")
    return expected["tokens_per_s_per_device"]


def tolerance_of(deck):
    dtype = deck["run.dtype"]
    if dtype == "fp32":
        return 1e-4
    if dtype == "bf16":
        return 3.5e-2 if int(deck["model.kv_heads"]) < int(deck["model.heads"]) else 2.5e-2
    return 5e-3


def tensor_names(deck):
    if deck["run.mode"] == "attention":
        return ["outputs/o", "outputs/lse", "grads/q", "grads/k", "grads/v"]
    names = ["outputs/loss", "outputs/y", "grads/x"]
    for layer in range(int(deck["model.layers"])):
        names += [f"grads/layer{layer}/{w}" for w in WEIGHTS]
    if int(deck.get("model.vocab", "0")) > 0:
        names.append("grads/lm_head")
    return names


def row_names(deck):
    """Every row of the table: the run's tensors, the one-device run's own where a 16-bit
    run meets fp64, and the loss of the run's own y in model mode."""
    names = tensor_names(deck)
    if deck["run.reference"] == "fp64" and deck["run.dtype"] != "fp32":
        names += ["one-device/" + n for n in names]
    if deck["run.mode"] == "model" and int(deck.get("model.vocab", "0")) == 0:
        names.append("checks/loss_of_y")
    return names


def row_tolerance(deck, tensor):
    return 1e-4 if tensor == "checks/loss_of_y" else tolerance_of(deck)


def check_verification(p, deck):
    if deck["run.verify"] != "true":
        if p.verdict != "UNVERIFIED":
            p.note("verdict", f"recorded {p.verdict} without run.verify")
        if p.reference or p.tensors:
            p.note("verification", "a reference or errors recorded without run.verify")
        return "UNVERIFIED"
    if p.reference != deck["run.reference"]:
        p.note("reference", f"recorded '{p.reference}', the deck's run.reference {deck['run.reference']}")
    expected = row_names(deck)
    valid = p.tensors == expected
    if not valid:
        p.note("verification/tensor", f"{len(p.tensors)} tensors recorded; the configuration compares {len(expected)}")
    wrong = {}
    for tensor, passed, err, t in zip(p.tensors, p.pass_, p.max_rel, p.tolerance):
        tol = row_tolerance(deck, tensor)
        if t != tol:
            wrong.setdefault("verification/tolerance", []).append(f"{tensor}: recorded {t}, its row's {tol}")
        derived = math.isfinite(err) and err <= tol
        if bool(passed) != derived:
            wrong.setdefault("verification/pass", []).append(f"{tensor}: recorded {passed} for max_rel_err {err}")
        valid = valid and derived
    for field, rows in sorted(wrong.items()):
        p.note(field, f"{len(rows)} rows disagree ({rows[0]})")
    verdict = "VALID" if valid else "INVALID"
    if p.verdict != verdict:
        p.note("verdict", f"recorded {p.verdict}, re-derived {verdict}")
    return verdict


def audit(p):
    check_digests(p)
    try:
        deck = parse_deck(p.deck)
        check_given(p, deck)
        usable = check_shape(p, deck)
        check_labels(p, deck)
        check_device(p, deck)
        if usable:
            p.fom = check_metrics(p, deck)
        p.derived_verdict = check_verification(p, deck)
        p.keys = deck
    except (ValueError, KeyError) as e:  # a resolved deck names every key
        p.note("deck", f"not a resolved deck: {e}")


# ---- the run rules -------------------------------------------------------------------------

def fields(p):
    out = []
    for f in p.findings:
        if f["field"] not in out:
            out.append(f["field"])
    return ", ".join(out)


def mismatch(a, b, may_differ):
    if a.keys is None or b.keys is None:
        return "a deck that does not resolve"
    for key, old, new in differences(parse_deck(a.deck), parse_deck(b.deck)):
        if not may_differ(key):
            return f"{key} ({old} against {new})"
    if a.ranks != b.ranks:
        return "the world size"
    if a.prov["numbers"].get("ranks_per_node", -1) != b.prov["numbers"].get("ranks_per_node", -1):
        return "the ranks per node"
    for key in BUILD_KEYS:
        if a.prov["text"].get(key, "not recorded") != b.prov["text"].get(key, "not recorded"):
            return f"the build's {key}"
    return ""


class Status:
    def __init__(self):
        self.status, self.why = "compliant", []

    def raise_(self, status, why):
        if STATUSES.index(status) > STATUSES.index(self.status):
            self.status = status
        self.why.append(why)


def fp64(v):
    return v.keys is not None and v.keys.get("run.reference") == "fp64" and v.reference == "fp64"


def join(run, m, verifications):
    joined = [m] if m.keys and m.keys.get("run.verify") == "true" else []
    closest = ""
    for v in verifications:
        if v.class_name != m.class_name:
            continue
        why = mismatch(m, v, verification_may_differ)
        if not why:
            joined.append(v)
            v.verifies.append(m.where)
        elif not closest:
            closest = f"{v.where} differs in {why}"
    valid = single = None
    for v in joined:
        if v is not m and v.findings:
            run["verification"] = f"inconsistent ({v.where})"
            run["state"].raise_("inconsistent", f"its verification run {v.where} is inconsistent: {fields(v)}")
            return
        if v.derived_verdict == "INVALID":
            run["verification"] = f"INVALID ({v.where})"
            run["state"].raise_("non-compliant", "INVALID verification")
            return
        if v.derived_verdict == "VALID":
            if fp64(v):
                valid = valid or v
            else:
                single = single or v
    if valid:
        run["verification"] = f"VALID ({valid.where})"
        return
    run["verification"] = (f"unverified: only {single.where}, a single-device diagnostic" if single else
                           f"unverified: {closest or 'no verification run of this configuration'}")
    run["state"].raise_("unverified", "no VALID fp64 verification of this configuration")


def assess_run(m, verifications, class_dir):
    run = {"point": m, "state": Status(), "not_allowed": [], "allowed": []}
    if m.findings:
        run["state"].raise_("inconsistent", f"recorded values disagree: {fields(m)}")
    class_file = os.path.join(class_dir, f"{m.class_name}.yaml")
    if m.keys is None:
        pass  # inconsistent already: a deck that does not resolve has no deviations to list
    elif not os.path.isfile(class_file):
        run["state"].raise_("non-compliant", f"class '{m.class_name}' is not one of the benchmark's")
    else:
        with open(class_file) as f:
            reference = parse_deck(f.read())
        for key, _, _ in differences(reference, parse_deck(m.deck)):
            run["allowed" if allowed(key) else "not_allowed"].append(key)
        if run["not_allowed"]:
            run["state"].raise_("non-compliant", "not allowed: " + ", ".join(run["not_allowed"]))
    join(run, m, verifications)
    return run


def class_entries(runs):
    entries = []
    for run in runs:
        m = run["point"]
        entry = next((e for e in entries if e["class"] == m.class_name and
                      not mismatch(e["first"], m, outside_configuration)), None)
        if entry is None:
            entry = {"class": m.class_name, "first": m, "launches": [], "copies": [], "state": Status(),
                     "configuration": f"backend={m.labels.get('backend', '?')}, devices={m.ranks}, ranks per node="
                                      f"{int(m.prov['numbers'].get('ranks_per_node', -1))}"}
            entries.append(entry)
        copy = next((r for r in entry["launches"] if np.array_equal(r["point"].iter_seconds, m.iter_seconds)), None)
        if copy is None:
            entry["launches"].append(run)
        else:
            entry["copies"].append(f"{m.where} (times of {copy['point'].where})")
    for e in entries:
        foms = []
        for run in e["launches"]:
            if run["state"].status != "compliant":
                e["state"].raise_(run["state"].status, f"{run['point'].where} {run['state'].status}")
            if run["point"].fom > 0:
                foms.append(run["point"].fom)
        for copy in e["copies"]:
            e["state"].raise_("inconsistent", f"{copy} repeats another launch's times")
        if len(e["launches"]) < REQUIRED_LAUNCHES:
            n = len(e["launches"])
            e["state"].raise_("non-compliant", f"{n} launch{'es' if n != 1 else ''}; the run rules ask for "
                                               f"{REQUIRED_LAUNCHES}")
        e["median"] = float(np.median(foms)) if foms else 0.0
        e["min"], e["max"] = (min(foms), max(foms)) if foms else (0.0, 0.0)
        e["spread"] = (e["max"] - e["min"]) / e["median"] if foms else 0.0
        e["spread_flagged"] = e["spread"] > SPREAD_BOUND
    return entries


def projected(p):
    return (p.labels.get("projected") == "true" or p.verdict == "PROJECTED" or
            p.prov["text"].get("projected") == "true")


def class_and_role(deck_text):
    keys = parse_deck(deck_text)
    return keys.get("benchmark.class", ""), keys.get("benchmark.role", "measurement")


def assess(files, class_dir):
    state, left_out, measurements, verifications = Status(), [], [], []
    for path, (_, _, unreadable) in files:
        for line in unreadable:
            left_out.append({"run": path, "why": line})
            state.raise_("inconsistent", f"{path}: {line}")
    points = sorted((p for _, (_, pts, _) in files for p in pts), key=lambda p: (p.path.encode(), p.name.encode()))
    for p in points:
        if p.skipped:
            left_out.append({"run": p.where, "why": f"skipped: {p.skipped}"})
            continue
        if projected(p):
            left_out.append({"run": p.where, "why": "projected (minictx project), not measured"})
            continue
        try:
            p.class_name, p.role = class_and_role(p.deck)
        except ValueError:
            left_out.append({"run": p.where, "why": "its deck does not parse"})
            state.raise_("inconsistent", f"{p.where}: its deck does not parse")
            continue
        if not p.class_name:
            left_out.append({"run": p.where, "why": "not a class run (no benchmark.class)"})
            continue
        audit(p)
        p.verifies = []
        (verifications if p.role == "verification" else measurements).append(p)
    runs = [assess_run(m, verifications, class_dir) for m in measurements]
    for v in verifications:
        if v.findings:
            state.raise_("inconsistent", f"{v.where} is inconsistent: {fields(v)}")
    entries = class_entries(runs)
    for e in entries:
        if e["state"].status != "compliant":
            state.raise_(e["state"].status, f"{e['class']} ({e['configuration']}) {e['state'].status}")
    if not entries:
        state.raise_("non-compliant", "no class measurement among the files")
    return state, runs, verifications, entries, left_out


def document(state, runs, verifications, entries, left_out):
    return {
        "format": "minictx-submission-assessment", "version": 1, "status": state.status,
        "exit_code": EXIT[state.status], "why": state.why, "required_launches": REQUIRED_LAUNCHES,
        "spread_bound": SPREAD_BOUND,
        "classes": [{"class": e["class"], "configuration": e["configuration"],
                     "launches": [r["point"].where for r in e["launches"]], "copies": e["copies"],
                     "fom_median": e["median"], "fom_min": e["min"], "fom_max": e["max"], "spread": e["spread"],
                     "spread_flagged": e["spread_flagged"], "status": e["state"].status, "why": e["state"].why}
                    for e in entries],
        "runs": [{"run": r["point"].where, "file": r["point"].path, "point": r["point"].name,
                  "class": r["point"].class_name, "fom": r["point"].fom, "devices": r["point"].ranks,
                  "verification": r["verification"], "status": r["state"].status, "why": r["state"].why,
                  "inconsistent": r["point"].findings, "not_allowed": r["not_allowed"], "allowed": r["allowed"],
                  "digest": r["point"].digest} for r in runs],
        "verifications": [{"run": v.where, "class": v.class_name, "verdict": v.derived_verdict,
                           "reference": v.reference, "consistent": not v.findings, "inconsistent": v.findings,
                           "verifies": v.verifies} for v in verifications],
        "left_out": left_out,
    }


def check(paths, class_dir):
    """The assessment document of these files; ValueError/OSError/KeyError for bad input."""
    files = []
    for path in paths:
        try:
            files.append((path, read_file(path)))
        except (OSError, KeyError, ValueError) as e:
            raise ValueError(f"results file '{path}': {e}") from e
    return document(*assess(files, class_dir))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--json", help="write the assessment as JSON to this file")
    parser.add_argument("--classes", default=os.path.join(here, "..", "inputs", "benchmark", "resolved"),
                        help="the resolved class decks (default: inputs/benchmark/resolved beside this tool)")
    args = parser.parse_args()
    try:
        doc = check(args.files, args.classes)
    except ValueError as e:
        print(f"check-submission: error: {e}", file=sys.stderr)
        return 2
    for e in doc["classes"]:
        flag = f" FLAGGED above {SPREAD_BOUND:.0%}" if e["spread_flagged"] else ""
        print(f"class {e['class']} ({e['configuration']}): {len(e['launches'])} launches, FOM median "
              f"{e['fom_median']:.1f} (min {e['fom_min']:.1f}, max {e['fom_max']:.1f}, spread {e['spread']:.1%}{flag}): "
              f"{e['status']}" + (f" ({'; '.join(e['why'])})" if e["why"] else ""))
    for r in doc["runs"]:
        print(f"run {r['run']}: FOM {r['fom']:.1f} tokens/s per device, {r['verification']}: {r['status']}")
        for f in r["inconsistent"]:
            print(f"  {f['field']}: {f['detail']}")
    for v in doc["verifications"]:
        print(f"verification {v['run']}: {v['verdict'] if v['consistent'] else 'inconsistent'}")
        for f in v["inconsistent"]:
            print(f"  {f['field']}: {f['detail']}")
    for l in doc["left_out"]:
        print(f"left out {l['run']}: {l['why']}")
    print(f"submission: {doc['status']} (exit {doc['exit_code']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return doc["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
