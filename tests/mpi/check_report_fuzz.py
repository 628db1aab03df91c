#!/usr/bin/env python3
"""`minictx report` on damaged results files never crashes, never hangs, and prints the
good points. A real 4-point results file is damaged at many seeded places:

- anywhere in the file: report ends (within a time limit, never by a signal) with a
  table (exit 0) or one `minictx: error:` line (exit 2);
- inside one point's objects only (the first 40 bytes of the object headers of
  point_0002 and of everything in it, found with h5py): the other three points print exactly as before, and
  point_0002 is named unreadable on stderr (or, if the damage only changed values, prints).

The same reader serves `run --resume`, which is checked on one damaged copy: the
unreadable point runs again and the good ones are kept.

  check_report_fuzz.py MINICTX [CASES]"""
import random
import shutil
import subprocess
import sys
import tempfile

import h5py

minictx = sys.argv[1]
cases = int(sys.argv[2]) if len(sys.argv) > 2 else 120
LIMIT_S = 90  # one report; the reader's own limit is 30 s per child
sweep = ["run", "--set", "run.mode=attention", "--set", "sequence.length=[64,128,192,256]", "--set", "run.iters=1",
         "--set", "run.warmup=0"]


def report(path):
    r = subprocess.run([minictx, "report", path, "--format", "csv"], capture_output=True, text=True, errors="replace", timeout=LIMIT_S)
    assert r.returncode in (0, 2), f"report exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    # Only our lines: no backtrace, no HDF5 error stack, even when the reader crashed.
    assert all(l.startswith("minictx: ") for l in r.stderr.splitlines()), r.stderr
    if r.returncode == 2:
        errors = [l for l in r.stderr.splitlines() if l.startswith("minictx: error:")]
        assert len(errors) == 1, r.stderr
    return r


def rows(stdout):
    return {l.split(",", 1)[0]: l for l in stdout.splitlines()[1:] if l.startswith("point_")}


def damage(src, dst, offset, length, rng):
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        f.seek(offset)
        f.write(bytes(rng.randrange(256) for _ in range(length)))


with tempfile.TemporaryDirectory() as tmp:
    good = f"{tmp}/good.h5"
    subprocess.run([minictx] + sweep + ["-o", good], check=True, capture_output=True)
    clean = report(good)
    assert clean.returncode == 0 and clean.stderr == "", clean.stderr
    original = rows(clean.stdout)
    assert sorted(original) == ["point_0000", "point_0001", "point_0002", "point_0003"], original
    size = len(open(good, "rb").read())
    with h5py.File(good, "r") as f:
        point = f["points/point_0002"]
        headers = [h5py.h5o.get_info(point.id).addr]
        point.visit(lambda name: headers.append(h5py.h5o.get_info(point[name].id).addr))

    rng = random.Random(16)
    outcomes = {0: 0, 2: 0}
    for case in range(cases):
        bad = f"{tmp}/any_{case}.h5"
        damage(good, bad, rng.randrange(size), rng.choice([1, 8, 64]), rng)
        outcomes[report(bad).returncode] += 1
    print(f"damage anywhere: {cases} files, {outcomes[0]} printed a table, {outcomes[2]} one error line")

    unreadable = 0
    resumable = None  # the first copy whose point_0002 is unreadable, for --resume below
    for case in range(cases // 4):
        bad = f"{tmp}/point_{case}.h5"
        # An object header's first chunk is at least 40 bytes (prefix and one message or a
        # continuation); damage stays inside it.
        damage(good, bad, rng.choice(headers) + rng.randrange(0, 32), 8, rng)
        r = report(bad)
        assert r.returncode == 0, r.stderr
        got = rows(r.stdout)
        for name in ("point_0000", "point_0001", "point_0003"):
            assert got.get(name) == original[name], (name, got.get(name), original[name], r.stderr)
        if "point_0002" not in got:
            assert "point_0002 unreadable: " in r.stderr, r.stderr
            unreadable += 1
            resumable = resumable or bad
    print(f"damage inside point_0002: {cases // 4} files, the other points printed unchanged; "
          f"{unreadable} reported point_0002 unreadable")
    assert unreadable > 0, "no damage made point_0002 unreadable: the test did not test"

    # --resume on a file whose point_0002 is unreadable runs that point again.
    bad = resumable
    resumed = subprocess.run([minictx] + sweep + ["-o", bad, "--resume"], capture_output=True, text=True,
                             timeout=LIMIT_S)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "point_0002 unreadable" in resumed.stderr and "it runs again" in resumed.stderr, resumed.stderr
    assert resumed.stdout.count("in the file already (--resume)") == 3, resumed.stdout
    after = report(bad)
    assert after.returncode == 0 and after.stderr == "", after.stderr
    got = rows(after.stdout)
    assert sorted(got) == sorted(original), got
    for name in ("point_0000", "point_0001", "point_0003"):
        assert got[name] == original[name], (got[name], original[name])
print("fuzz ok")
