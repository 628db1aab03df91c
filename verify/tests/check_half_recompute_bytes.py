#!/usr/bin/env python3
"""checkpointing: selective_half against selective on a stripe ring of 4 ranks, one step
of the tiny model: the only extra traffic is the recompute's ring forward over the first
half of every rank's rows. Under a causal mask those queries see only the first half of
every rank's K/V, so per rank and layer it sends 8·(P−1)·B·(L/2)·Hkv·D bytes (the ring
forward's formula, backends/ring/ring_engine.cpp, for half the rows); without a mask all
of K/V travels, 8·(P−1)·B·L·Hkv·D."""
import os
import subprocess
import sys
import tempfile

import h5py

minictx, mpiexec = sys.argv[1], sys.argv[2]
P, LAYERS, SEQ, KV_WIDTH = 4, 2, 1000, 4 * 32  # tiny: 4 KV heads of 32
L = SEQ // P


def bytes_per_rank(tmp, checkpointing, causal):
    path = os.path.join(tmp, f"{checkpointing}_{causal}.h5")
    run = subprocess.run([mpiexec, "-n", str(P), minictx, "run", "-o", path, "--set", "model.preset=tiny",
                          "--set", f"model.layers={LAYERS}", "--set", "attention.backend=ring", "--set",
                          "attention.ring_type=stripe", "--set", f"attention.causal={causal}", "--set",
                          f"sequence.length={SEQ}", "--set", "run.mode=model", "--set",
                          f"run.checkpointing={checkpointing}", "--set", "run.warmup=0", "--set", "run.iters=1"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    p = h5py.File(path, "r")["points/point_0000"]
    return [a + b for a, b in zip(p["bytes_sent_intra"][:], p["bytes_sent_inter"][:])]


with tempfile.TemporaryDirectory() as tmp:
    for causal, rows in (("true", L // 2), ("false", L)):
        kept = bytes_per_rank(tmp, "selective", causal)
        half = bytes_per_rank(tmp, "selective_half", causal)
        want = LAYERS * 8 * (P - 1) * rows * KV_WIDTH
        got = [h - k for h, k in zip(half, kept)]
        print(f"causal {causal}: selective_half − selective per rank {got}, expected {want}")
        assert got == [want] * P, (got, want)
print("half recompute bytes ok")
