#!/usr/bin/env python3
"""checkpointing: selective_half against selective on a stripe ring of 4 ranks, one step
of the tiny model: the only extra traffic is the recompute's ring forward over the first
half of every rank's rows. Under a causal mask those queries see only the first half of
every rank's K/V, so per rank and layer it sends 8·(P−1)·B·(L/2)·Hkv·D bytes (the ring
forward's formula, backends/engine/ring_engine.cpp, for half the rows); without a mask all
of K/V travels, 8·(P−1)·B·L·Hkv·D. The four steps (two policies, causal and not) are the
points of one sweep, each with its own byte counts."""
import os
import subprocess
import sys
import tempfile

import h5py

minictx, mpiexec = sys.argv[1], sys.argv[2]
P, LAYERS, SEQ, KV_WIDTH = 4, 2, 200, 4 * 32  # tiny: 4 KV heads of 32; SEQ a multiple of P (no padding)
L = SEQ // P

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "sweep.h5")
    run = subprocess.run([mpiexec, "-n", str(P), minictx, "run", "-o", path, "--set", "model.preset=tiny",
                          "--set", f"model.layers={LAYERS}", "--set", "attention.backend=ring", "--set",
                          "attention.ring_type=stripe", "--set", "attention.causal=[true,false]", "--set",
                          f"sequence.length={SEQ}", "--set", "run.mode=model", "--set",
                          "run.checkpointing=[selective,selective_half]", "--set", "run.warmup=0", "--set",
                          "run.iters=1"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    sent = {}  # (checkpointing, causal) -> bytes per rank
    with h5py.File(path, "r") as f:
        for p in f["points"].values():
            labels = p["labels"].attrs
            sent[labels["checkpointing"], labels["causal"]] = [
                a + b for a, b in zip(p["bytes_sent_intra"][:], p["bytes_sent_inter"][:])]
    assert len(sent) == 4, sorted(sent)
    for causal, rows in (("true", L // 2), ("false", L)):
        want = LAYERS * 8 * (P - 1) * rows * KV_WIDTH
        got = [h - k for h, k in zip(sent["selective_half", causal], sent["selective", causal])]
        print(f"causal {causal}: selective_half − selective per rank {got}, expected {want}")
        assert got == [want] * P, (got, want)
print("half recompute bytes ok")
