#!/usr/bin/python3
"""tools/error-study.sh at its smallest (world sizes 1 and 2, one layer, 64 tokens): every
point VALID; one row per world size, dtype and partials; at one rank the forward equal to
one device's; at two ranks storage partials farther from one device than fp32 partials in
bf16 and fp16 (the rounding the key adds); and the figure drawn.

  check_error_study.py MINICTX MPIEXEC SOURCE_DIR"""
import csv
import io
import os
import subprocess
import sys
import tempfile

minictx, mpiexec, source = sys.argv[1:4]
with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, MINICTX=minictx, MPIEXEC=mpiexec, WORLDS="1 2", LAYERS="1", LENGTH="64")
    run = subprocess.run([os.path.join(source, "tools", "error-study.sh"), tmp], capture_output=True, text=True,
                         env=env)
    print(run.stdout[-4000:] + run.stderr[-2000:])
    assert run.returncode == 0, run.returncode
    assert os.path.getsize(os.path.join(tmp, "errors.png")) > 10000, "the figure"
    files = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".h5"))
    table = subprocess.run([minictx, "report", "--columns", "errors", "--format", "csv"] + files,
                           capture_output=True, text=True, check=True).stdout
rows = list(csv.DictReader(io.StringIO(table)))
by = {(r["world"], r["dtype"], r["partials"]): r for r in rows}
assert len(rows) == 10 and len(by) == 10, f"{len(rows)} rows"
assert all(r["verdict"] == "VALID" for r in rows), [r["verdict"] for r in rows]
for dtype in ("bf16", "fp16"):
    for partials in ("fp32", "storage"):
        # One rank's ring forward is the local backend's, bit for bit; its dK, dV sums are
        # rounded to the dtype once on their way home (the walk's buffers are in the wire
        # dtype), so the gradients are not.
        one = by["1", dtype, partials]
        assert float(one["out rms rel vs 1 device"]) == 0, one
    kept, rounded = by["2", dtype, "fp32"], by["2", dtype, "storage"]
    assert float(rounded["out rms rel vs 1 device"]) > float(kept["out rms rel vs 1 device"]), (kept, rounded)
assert by["2", "fp32", "fp32"]["out rms rel vs 1 device"] == "n/a"
print("error study ok")
