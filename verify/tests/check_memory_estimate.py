#!/usr/bin/env python3
"""The memory estimate that refuses a run before it allocates must cover what the run
then allocates, and not by so much that it refuses runs that fit: for each backend, the
peak of one attention step, and for each checkpointing policy the peak of one training
step of the model (the FOM line's peak_MB), must lie within [estimate/2, estimate] of
`minictx run --dry-run`'s estimate, on 4 ranks as 2 emulated nodes.

  check_memory_estimate.py MPIEXEC MINICTX"""
import re
import subprocess
import sys
import tempfile

mpiexec, minictx = sys.argv[1], sys.argv[2]
common = ["--set", "run.mode=attention", "--set", "sequence.length=4096", "--set", "model.kv_heads=8",
          "--set", "topology.ranks_per_node=2"]
backends = [["ring"], ["double_ring", "--set", "attention.window_size=2"], ["burst"],
            ["burst", "--set", "attention.intra=ulysses"], ["burst", "--set", "attention.bwd_comm=kv"],
            ["usp", "--set", "attention.ulysses_degree=2"], ["ulysses"], ["allgather"]]
cases = [common + ["--set", f"attention.backend={b[0]}"] + b[1:] for b in backends]
model = ["--set", "run.mode=model", "--set", "model.preset=tiny", "--set", "model.layers=4", "--set",
         "sequence.length=4096", "--set", "attention.backend=ring", "--set", "attention.ring_type=stripe"]
cases += [model + ["--set", f"run.checkpointing={c}"] for c in ("none", "full", "selective", "selective_half")]
ok = True
with tempfile.TemporaryDirectory() as tmp:
    for args in cases:
        label = " ".join(a.split("=", 1)[1] for a in args if a.startswith(("attention.", "run.")))
        dry = subprocess.run([minictx, "run", "--dry-run", "--ranks", "4"] + args, capture_output=True, text=True,
                             check=True).stdout
        estimate = float(re.search(r"memory estimate (\d+) MiB", dry).group(1))
        run = subprocess.run([mpiexec, "-n", "4", minictx, "run", "-o", f"{tmp}/m.h5", "--force", "--set",
                              "run.iters=1", "--set", "run.warmup=0"] + args, capture_output=True, text=True,
                             check=True).stdout
        peak = float(re.search(r"peak_MB=([\d.]+)", run).group(1))
        fits = estimate / 2 <= peak <= estimate
        ok &= fits
        print(f"{label:55s} peak {peak:6.1f} MiB, estimate {estimate:6.0f} MiB {'ok' if fits else 'OUT OF RANGE'}")
print("estimates cover the peaks" if ok else "ESTIMATE OUT OF RANGE")
sys.exit(0 if ok else 1)
