#!/usr/bin/python3
"""tools/error-study.sh at its smallest (world sizes 1 and 2, one seed, the zigzag ring,
one layer, 32 tokens a rank, head_dim 32, the attention panel too): every point VALID;
one row per world size, dtype and partials; at one rank the forward equal to one device's;
at two ranks storage and accumulator partials farther from one device than fp32 partials
in bf16 and fp16 (the rounding the key adds); the table (tools/error-study-table.py) with
the ratio to one rank, which in attention mode at one rank is near 1 (the ring and the
local backend get the same 16-bit inputs and differ only in order), and the figure drawn. First: WORLDS or SEEDS that name no value, or not whole
numbers, are refused before any run; and a SIGTERM to the script while its ranks run
reaches them, and the script ends after them, with their status, leaving no process
behind.

  check_error_study.py MINICTX MPIEXEC SOURCE_DIR"""
import csv
import io
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_support import points_in  # noqa: E402

minictx, mpiexec, source = sys.argv[1:4]
script = os.path.join(source, "tools", "error-study.sh")
LIMIT_S = 120  # a generous bound for a loaded machine, never the pass criterion


def running_in(folder):
    """The live processes (mpiexec, its proxies, the ranks) whose command line names FOLDER."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                named = folder.encode() in f.read()
            with open(f"/proc/{entry}/stat") as f:
                live = f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            continue
        if named and live:
            found.append(int(entry))
    return found


with tempfile.TemporaryDirectory() as tmp:
    for key, value in (("WORLDS", "0"), ("WORLDS", ""), ("WORLDS", "2 x"), ("WORLDS", "-1"), ("SEEDS", "a")):
        env = dict(os.environ, MINICTX=minictx, MPIEXEC=mpiexec, **{key: value})
        run = subprocess.run([script, tmp], capture_output=True, text=True, env=env, timeout=LIMIT_S)
        assert run.returncode == 2 and f"error-study.sh: {key}" in run.stderr, (key, value, run.returncode, run.stderr)
        assert not [f for f in os.listdir(tmp) if f.endswith(".h5")], (key, value, os.listdir(tmp))

    # The signal comes once the first run holds a point, so while its ranks run on (the
    # second point) or, on a fast machine, between two runs: either way the script must
    # stop there, and not before the ranks it started have ended.
    env = dict(os.environ, MINICTX=minictx, MPIEXEC=mpiexec, WORLDS="2", SEEDS="1", BACKENDS="ring:zigzag",
               HEAD_DIM="32", LAYERS="[1]")
    study = subprocess.Popen([script, tmp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + LIMIT_S
    while not points_in(os.path.join(tmp, "ring-zigzag-world-2-seed-1-model.h5")):
        assert study.poll() is None and time.monotonic() < deadline, study.stdout.read()
        time.sleep(0.05)
    os.kill(study.pid, signal.SIGTERM)
    out = study.communicate(timeout=LIMIT_S)[0]
    print(out)
    assert study.returncode != 0, out
    assert not running_in(tmp), running_in(tmp)
    assert not os.path.exists(os.path.join(tmp, "errors.md")), "the study went on after the signal"
    print("error study: WORLDS and SEEDS checked; a SIGTERM stops the study after its ranks")

with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, MINICTX=minictx, MPIEXEC=mpiexec, WORLDS="1 2", SEEDS="1", BACKENDS="ring:zigzag",
               LAYERS="[1]", ATTENTION="1", TOKENS_PER_RANK="32", HEAD_DIM="32")
    run = subprocess.run([os.path.join(source, "tools", "error-study.sh"), tmp], capture_output=True, text=True,
                         env=env)
    print(run.stdout[-4000:] + run.stderr[-2000:])
    assert run.returncode == 0, run.returncode
    assert os.path.getsize(os.path.join(tmp, "errors.png")) > 10000, "the figure"
    with open(os.path.join(tmp, "errors.md")) as f:
        study_table = f.read()
    assert "| ring zigzag | model | 1 | bf16 | accumulator | 2 | 1 |" in study_table, study_table
    attention_rows = 0
    for line in study_table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[1:3] == ["attention", "n/a"] and cells[3] != "fp32" and cells[5] == "1":
            attention_rows += 1
            for ratio in (float(cells[8]), float(cells[10])):  # output's, gradients' over one device
                assert 0.5 <= ratio <= 2, line
    assert attention_rows == 6, study_table
    files = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith("-model.h5"))
    table = subprocess.run([minictx, "report", "--columns", "errors", "--format", "csv"] + files,
                           capture_output=True, text=True, check=True).stdout
rows = list(csv.DictReader(io.StringIO(table)))
by = {(r["world"], r["dtype"], r["partials"]): r for r in rows}
assert len(rows) == 14 and len(by) == 14, f"{len(rows)} rows"
assert all(r["verdict"] == "VALID" for r in rows), [r["verdict"] for r in rows]
for dtype in ("bf16", "fp16"):
    for partials in ("fp32", "storage", "accumulator"):
        # One rank's ring forward is the local backend's, bit for bit; its dK, dV sums are
        # rounded to the dtype once on their way home (the walk's buffers are in the wire
        # dtype), so the gradients are not.
        one = by["1", dtype, partials]
        assert float(one["out rms rel vs 1 device"]) == 0, one
    kept = by["2", dtype, "fp32"]
    for partials in ("storage", "accumulator"):
        rounded = by["2", dtype, partials]
        assert float(rounded["out rms rel vs 1 device"]) > float(kept["out rms rel vs 1 device"]), (kept, rounded)
assert by["2", "fp32", "fp32"]["out rms rel vs 1 device"] == "n/a"
print("error study ok")
