#!/usr/bin/env python3
"""`minictx report --submission` on runs of the tiny class's host twin:
- the twin as shipped with its verification run: compliant, the FOM verified by the joined
  VALID verification run, no deviation; the run's lines say which is the measurement and
  which the verification; the CSV worksheet is written alongside;
- the measurement alone: unverified;
- a shorter sequence, or another layer count: non-compliant, naming the key;
- another backend and other tiles: listed as allowed deviations (and unverified, since
  the verification run used the class's backend).

  check_submission.py MINICTX MPIEXEC INPUTS_BENCHMARK_DIR"""
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

minictx, mpiexec, decks = sys.argv[1:4]
deck = os.path.join(decks, "tiny-twin.yaml")
quick = ["--set", "run.warmup=0", "--set", "run.iters=1"]  # allowed changes: the timing loop


def run(out, *sets):
    r = subprocess.run([mpiexec, "-n", "1", minictx, "run", deck, "-o", out, *sets], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def report(*files):
    r = subprocess.run([minictx, "report", "--submission", *files], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def row(doc, run_file):
    """The figures-of-merit row of the run in `run_file`."""
    rows = [line for line in doc.splitlines() if line.startswith("| tiny-twin |") and line.rstrip().endswith(
        f"{run_file}:point_0000 |")]
    assert len(rows) == 1, doc
    return rows[0]


with tempfile.TemporaryDirectory() as tmp:
    m, v = os.path.join(tmp, "m.h5"), os.path.join(tmp, "v.h5")
    short, deep, other = (os.path.join(tmp, n) for n in ("short.h5", "deep.h5", "other.h5"))
    # The five 1-rank runs are independent: two at a time on the test's two processors.
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [pool.submit(run, m), pool.submit(run, v, "--set", "benchmark.role=verification"),
                pool.submit(run, short, "--set", "sequence.length=1024", *quick),
                pool.submit(run, deep, "--set", "model.layers=2", *quick),
                pool.submit(run, other, "--set", "attention.backend=ring", "--set", "attention.block_q=128", *quick)]
        outs = [r.result() for r in runs]
    out = outs[0]
    assert re.search(r"^FOM class=tiny-twin .* UNVERIFIED \(measurement; its verification: ", out, re.M), out
    out = outs[1]
    assert re.search(r"^VERIFICATION class=tiny-twin .*seq=512 .* VALID \(verification run of class tiny-twin at 512 "
                     r"tokens, 1 layers, against fp64", out, re.M), out

    csv = os.path.join(tmp, "submission.csv")
    r = subprocess.run([minictx, "report", "--submission", m, v, "--csv", csv], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = r.stdout
    print(doc)
    line = row(doc, m)
    assert "| compliant |" in line and f"VALID (verification run {v}:point_0000, 512 tokens, 1 layers" in line, line
    assert "None: every class run is its class deck as shipped." in doc, doc
    for system in ("| OS and kernel |", "| MPI library |", "| HDF5 |", "| Kokkos |", "| minictx version |"):
        assert system in doc, system
    sheet = open(csv).read().splitlines()
    assert sheet[0].startswith("class,FOM: tokens/s per device,") and sheet[1].startswith("tiny-twin,"), sheet
    assert ",compliant," in sheet[1], sheet[1]

    line = row(report(m), m)
    assert "| unverified: no verification run of this configuration | unverified |" in line, line

    doc = report(short, deep, other, v)
    print(doc)
    assert "| non-compliant: sequence.length |" in row(doc, short), row(doc, short)
    assert "| non-compliant: model.layers |" in row(doc, deep), row(doc, deep)
    assert re.search(rf"\| tiny-twin \| {re.escape(short)}:point_0000 \| sequence.length \| 2048 \| 1024 \| NOT ALLOWED \|",
                     doc), doc
    line = row(doc, other)
    assert "| unverified: " in line and "differs in attention.backend (this run ring, the verification run local)" in line, line
    for key, old, new in (("attention.backend", "local", "ring"), ("attention.block_q", "256", "128"),
                          ("run.iters", "2", "1")):
        assert re.search(rf"\| {re.escape(other)}:point_0000 \| {key} \| {old} \| {new} \| allowed \|", doc), key
print("submission ok")
