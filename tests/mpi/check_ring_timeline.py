#!/usr/bin/env python3
"""run.ring_timeline end to end: a 4-rank sweep of ring (zigzag), double_ring and burst
(windows of 2: two emulated nodes) in model mode with full checkpointing, so every layer has
a forward, a recompute and a backward walk; then local on one rank. Per point, with h5py:
every rank has one record per ring step of every walk (C = context ranks), each source rank
once per walk and each (round, step) of the two-level ring once; every interval starts before
it ends, a step's transfer is posted before its compute and done after it, a rank's compute
intervals do not overlap, all lie within the recorded (last) iteration; transfers are absent
exactly where the walk moves nothing. The outer-ring transfers (ring_timeline/outer): none on
the plain ring; on the two-level rings (W = C/w windows) per rank and walk W - 1 block hops
(rounds 0 .. W-2) and in the backward W sums hops (rounds 0 .. W-1), each posted before it is
done, within the iteration, a block's spanning its round's computes and a round's sums posted
after that round's computes and done after the next round's (or the last round's).
local records an empty group; off records iteration -1.
Further arguments are deck settings for every run (run.device=cuda: the CUDA event clock).

  check_ring_timeline.py MINICTX MPIEXEC [KEY=VALUE...]"""
import math
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

import h5py

minictx, mpiexec, common = sys.argv[1], sys.argv[2], sys.argv[3:]
CLOCK = "cuda events (compute stream)" if "run.device=cuda" in common else "host steady_clock"
LAYERS, ITERS = 2, 2


def run(ranks, out, *sets):
    args = [mpiexec, "-n", str(ranks), minictx, "run", "-o", out, "--set", "run.iters=%d" % ITERS,
            "--set", "run.warmup=0", "--set", "model.layers=%d" % LAYERS, "--set", "sequence.length=512"]
    for s in list(sets) + common:
        args += ["--set", s]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ring timeline not written" not in done.stderr, done.stderr


def check_ring_point(name, p):
    labels = p["labels"].attrs
    t = p["ring_timeline"]
    assert t.attrs["iteration"] == p.attrs["iters"] - 1, (name, t.attrs["iteration"])
    assert t.attrs["clock"] == CLOCK, t.attrs["clock"]
    ranks, context, window = int(p.attrs["ranks"]), int(labels["context_size"]), int(labels["window_size"])
    assert context == ranks == 4, dict(labels)
    assert window == (4 if labels["backend"] == "ring" else 2), dict(labels)  # a node of 2 for the others
    windows = context // window
    col = {k: t[k].asstr()[:] if k == "pass" else t[k][:] for k in t if k not in ("outer", "phases")}
    n = len(col["rank"])
    assert n == ranks * LAYERS * 3 * context, (name, n)
    last_iter = p["iter_seconds"][-1, :]
    walks = defaultdict(list)
    for i in range(n):
        walks[(int(col["rank"][i]), int(col["layer"][i]), col["pass"][i])].append(i)
    assert len(walks) == ranks * LAYERS * 3, sorted(walks)
    for (rank, layer, pass_), rows in walks.items():
        where = f"{name} rank {rank} layer {layer} {pass_}"
        assert len(rows) == context, where
        assert sorted(col["source"][rows]) == list(range(context)), (where, col["source"][rows])
        assert sorted(zip(col["round"][rows], col["step"][rows])) == \
            [(o, s) for o in range(windows) for s in range(window)], where
        for i in rows:
            cs, ce = col["compute_start"][i], col["compute_end"][i]
            tp, td = col["transfer_posted"][i], col["transfer_done"][i]
            assert 0 <= cs <= ce <= last_iter[rank], (where, cs, ce, last_iter[rank])
            moves = window > 1 if pass_ == "backward" else col["step"][i] < window - 1
            if moves:
                assert tp <= cs and ce <= td <= last_iter[rank], (where, i, tp, cs, ce, td)
            else:
                assert math.isnan(tp) and math.isnan(td), (where, i, tp, td)
    check_outer(name, t["outer"], col, walks, windows, last_iter)
    for rank in range(ranks):
        mine = sorted((col["compute_start"][i], col["compute_end"][i]) for i in range(n) if col["rank"][i] == rank)
        for (_, end), (start, _) in zip(mine, mine[1:]):
            assert end <= start, f"{name} rank {rank}: compute intervals overlap"


def check_outer(name, t, col, walks, windows, last_iter):
    out = {k: t[k].asstr()[:] if k in ("pass", "carries") else t[k][:] for k in t}
    hops = defaultdict(list)
    for i in range(len(out["rank"])):
        hops[(int(out["rank"][i]), int(out["layer"][i]), out["pass"][i])].append(i)
    if windows == 1:
        assert not hops, f"{name}: a plain ring recorded outer transfers"
        return
    assert set(hops) == set(walks), (name, sorted(set(hops) ^ set(walks)))
    for (rank, layer, pass_), rows in hops.items():
        where = f"{name} rank {rank} layer {layer} {pass_} outer"
        want = [("block", o) for o in range(windows - 1)]
        if pass_ == "backward":
            want += [("sums", o) for o in range(windows)]
        assert sorted(zip(out["carries"][rows], out["round"][rows])) == sorted(want), (where, want)
        steps = walks[(rank, layer, pass_)]
        # The computes of each round of this walk: (first start, last end).
        rounds = {o: (min(col["compute_start"][i] for i in steps if col["round"][i] == o),
                      max(col["compute_end"][i] for i in steps if col["round"][i] == o)) for o in range(windows)}
        for i in rows:
            tp, td, o = out["transfer_posted"][i], out["transfer_done"][i], int(out["round"][i])
            assert 0 <= tp <= td <= last_iter[rank], (where, i, tp, td, last_iter[rank])
            if out["carries"][i] == "block":  # posted at the round's start, waited at its end
                assert tp <= rounds[o][0] and rounds[o][1] <= td, (where, o, tp, td, rounds[o])
            else:  # posted after its round, waited after the next one's computes
                assert rounds[o][1] <= tp and rounds[min(o + 1, windows - 1)][1] <= td, (where, o, tp, td, rounds)


with tempfile.TemporaryDirectory() as tmp:
    ring = os.path.join(tmp, "ring.h5")
    run(4, ring, "attention.backend=[ring,double_ring,burst]", "attention.ring_type=zigzag",
        "topology.ranks_per_node=2", "run.checkpointing=full", "run.ring_timeline=true")
    with h5py.File(ring, "r") as f:
        points = f["points"]
        assert [points[k]["labels"].attrs["backend"] for k in sorted(points)] == ["ring", "double_ring", "burst"]
        for k in sorted(points):
            check_ring_point(k, points[k])

    local = os.path.join(tmp, "local.h5")
    run(1, local, "attention.backend=local", "run.ring_timeline=[true,false]")
    with h5py.File(local, "r") as f:
        on, off = f["points/point_0000/ring_timeline"], f["points/point_0001/ring_timeline"]
        assert on.attrs["iteration"] == ITERS - 1 and len(on["rank"]) == 0 and len(on["compute_start"]) == 0
        assert off.attrs["iteration"] == -1 and len(off["rank"]) == 0
        assert len(on["outer/rank"]) == 0 and len(off["outer/carries"]) == 0
print("ring timeline ok")
