#!/usr/bin/env python3
"""The honest runs the submission tests assess (the fixture of benchmark_submission and
benchmark_submission_tampered): the tiny class's host twin as shipped, three launches
(m1, m2, m3), its fp64 verification run (v) and a single-device one (vsingle); runs that
change a key the rules forbid (short: sequence.length; deep: model.layers) or allow (other:
attention.backend and block_q), with a short timing loop (allowed); and the class deck
projected on an H100 profile (proj). Each run's stdout is kept beside its file (NAME.log).

  make_submission_runs.py MINICTX MPIEXEC INPUTS_BENCHMARK_DIR OUT_DIR"""
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

minictx, mpiexec, decks, out = sys.argv[1:5]
deck = os.path.join(decks, "tiny-twin.yaml")
quick = ["--set", "run.warmup=0", "--set", "run.iters=1"]
verification = ["--set", "benchmark.role=verification"]
runs = {"m1": [], "m2": [], "m3": [], "v": verification,
        "vsingle": verification + ["--set", "run.reference=single-device"],
        "short": ["--set", "sequence.length=1024", *quick], "deep": ["--set", "model.layers=2", *quick],
        "other": ["--set", "attention.backend=ring", "--set", "attention.block_q=128", *quick]}

shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)


def run(name):
    cmd = [mpiexec, "-n", "1", minictx, "run", deck, "-o", os.path.join(out, name + ".h5"), *runs[name]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}: {r.stdout}{r.stderr}"
    with open(os.path.join(out, name + ".log"), "w") as f:
        f.write(r.stdout)


# The runs are independent, one rank each: two at a time on the test's two processors.
with ThreadPoolExecutor(max_workers=2) as pool:
    list(pool.map(run, runs))
p = subprocess.run([minictx, "project", deck, "--machine", "h100-sxm-ndr", "-o", os.path.join(out, "proj.h5")],
                   capture_output=True, text=True)
assert p.returncode == 0, p.stdout + p.stderr
print(f"submission runs ok: {', '.join(runs)} and proj in {out}")
