#!/usr/bin/env python3
"""`minictx report --submission` and tools/check-submission.py on honest runs of the tiny
class's host twin (make_submission_runs.py), agreeing on every case:
- three launches as shipped with their fp64 verification run: compliant (exit 0), the
  median, least and greatest FOM and the spread, the verification joined; the run's lines
  say which is the measurement and which the verification; the CSV worksheet and the JSON;
  the same assessment whatever the order of the files; a short system table;
- the launches without a verification run, or with a single-device one only: unverified
  (exit 4);
- two launches: non-compliant (exit 5); a shorter sequence or another layer count:
  non-compliant, naming the key; another backend and other tiles: allowed deviations;
- a projected file beside them: left out, not a class run with a FOM.

  check_submission.py MINICTX RUNS_DIR"""
import json
import os
import re
import sys
import tempfile

from submission_support import both

minictx, runs = sys.argv[1:3]


def f(name):
    return os.path.join(runs, name + ".h5")


def row(doc, run_file):
    """The class-runs row of the run in `run_file`."""
    section = doc.split("## Class runs")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| tiny-twin |") and line.rstrip().endswith(
        f"{run_file}:point_0000 |")]
    assert len(rows) == 1, doc
    return rows[0]


out = open(os.path.join(runs, "m1.log")).read()
assert re.search(r"^FOM class=tiny-twin .* UNVERIFIED \(measurement; its verification: ", out, re.M), out
out = open(os.path.join(runs, "v.log")).read()
assert re.search(r"^VERIFICATION class=tiny-twin .*seq=512 .* VALID \(verification run of class tiny-twin at 512 "
                 r"tokens, 1 layers, against fp64", out, re.M), out

honest = [f("m1"), f("m2"), f("m3"), f("v")]
code, doc, binary, _ = both(minictx, honest, "honest")
print(doc)
assert code == 0 and "Status: **compliant** (exit 0)" in doc, doc
assert re.search(r"^\| tiny-twin \| backend=local, devices=1, ranks per node=1 \| 3 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ "
                 r"\| [0-9.]+ %", doc, re.M), doc
entry = binary["classes"][0]
foms = sorted(r["fom"] for r in binary["runs"])
assert entry["fom_median"] == foms[1] and entry["fom_min"] == foms[0] and entry["fom_max"] == foms[2], entry
assert abs(entry["spread"] - (foms[2] - foms[0]) / foms[1]) < 1e-12, entry
for m in ("m1", "m2", "m3"):
    line = row(doc, f(m))
    assert "| compliant |" in line and f"VALID (verification run {f('v')}:point_0000, 512 tokens, 1 layers" in line
assert "None: every class run is its class deck as shipped." in doc, doc
assert "Nothing: every recorded figure, label, verdict and digest agrees with its recomputation." in doc, doc
system = doc.split("## System")[1].split("## Classes")[0]
for title in ("hosts", "nodes x ranks per node", "GPU", "GPU memory", "node memory", "interconnect (RDMA ports)",
              "NCCL", "MPI", "OS and kernel", "HDF5 / Kokkos", "minictx", "binary SHA-256"):
    assert f"| {title} |" in system, title
for line in system.splitlines()[4:]:
    assert len(line) <= 160, f"a system cell is not short: {line}"
assert re.search(r"^\| MPI \| (MPICH|Open MPI) v?[0-9.]+ \|$", system, re.M), system

# The files in another order, and the CSV worksheet.
with tempfile.TemporaryDirectory() as tmp:
    csv = os.path.join(tmp, "submission.csv")
    code, _, reversed_, _ = both(minictx, honest[::-1], "honest, reversed", ["--csv", csv])
    sheet = open(csv).read().splitlines()
assert json.dumps(reversed_, sort_keys=True) == json.dumps(binary, sort_keys=True), "the order of the files mattered"
assert sheet[0].startswith("class,FOM: tokens/s per device,") and len(sheet) == 4, sheet
assert all(",compliant," in line for line in sheet[1:]), sheet

code, doc, _, _ = both(minictx, honest[:3], "no verification")
assert code == 4 and "| unverified: no verification run of this configuration |" in row(doc, f("m1")), doc
code, doc, _, _ = both(minictx, honest[:3] + [f("vsingle")], "single-device verification")
assert code == 4 and "a diagnostic: only an fp64 verification counts" in row(doc, f("m1")), row(doc, f("m1"))

code, doc, _, _ = both(minictx, [f("m1"), f("m2"), f("v")], "two launches")
assert code == 5 and "2 launches; the run rules ask for 3" in doc, doc

code, doc, _, _ = both(minictx, [f("short"), f("deep"), f("other"), f("v")], "deviations")
print(doc)
assert code == 5, code
assert "not allowed: sequence.length" in row(doc, f("short")), row(doc, f("short"))
assert "not allowed: model.layers" in row(doc, f("deep")), row(doc, f("deep"))
assert re.search(rf"\| tiny-twin \| {re.escape(f('short'))}:point_0000 \| sequence.length \| 2048 \| 1024 \| NOT "
                 r"ALLOWED \|", doc), doc
line = row(doc, f("other"))
assert "| unverified: " in line and "differs in attention.backend (ring against local)" in line, line
for key, old, new in (("attention.backend", "local", "ring"), ("attention.block_q", "256", "128"),
                      ("run.iters", "2", "1")):
    assert re.search(rf"\| {re.escape(f('other'))}:point_0000 \| {key} \| {old} \| {new} \| allowed \|", doc), key

code, doc, binary, _ = both(minictx, honest + [f("proj")], "a projected file beside the runs")
assert code == 0 and "proj.h5:point_0000: projected (minictx project), not measured" in doc, doc
assert all("proj.h5" not in r["run"] for r in binary["runs"]), binary["runs"]
print("submission ok")
