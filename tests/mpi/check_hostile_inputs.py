#!/usr/bin/env python3
"""Hostile profiles, calibrations, labels and launches: one line and exit 2 on every rank.

  check_hostile_inputs.py MINICTX MPIEXEC SOURCE_DIR profiles | calibrations | report | launches

profiles: devices 0.5, 0 or 1e12, a non-numeric peak, an unknown --machine (which lists the
  profiles there are), `project -o EXISTING`.
calibrations: columns of different lengths, a negative bandwidth or latency, no rows, a
  zero-byte file (named, no HDF5 diagnostics), a file that is not HDF5.
report: a damaged label costs its point the row with one warning; --compare of a FIFO or
  a non-HDF5 file is refused at once; --compare of files with different ranks per node is
  refused; --resume of a projection says it is one.
launches: a run or dry run where no point runs on this many ranks, a dry run of a device
  this build lacks, and an output name too long for its scratch file, exit 2 with one line.
Each launch is wrapped so that every rank's own exit status is checked."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import h5py

minictx, mpiexec, source, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
LIMIT_S = 120
PROFILE = os.path.join(source, "inputs", "machines", "a100-80gb-hdr.yaml")
DECK = os.path.join(source, "inputs", "quickstart.yaml")
RING = ["--set", "attention.backend=ring", "--set", "run.mode=attention"]


def launch(args, ranks=2):
    """Every rank's exit status (the launcher's hides all but one) and stderr."""
    wrapped = [mpiexec, "-n", str(ranks), "sh", "-c", '"$0" "$@"; echo "rank exit $?" >&2', minictx] + args
    r = subprocess.run(wrapped, capture_output=True, text=True, timeout=LIMIT_S)
    codes = [int(c) for c in re.findall(r"^rank exit (\d+)$", r.stderr, re.M)]
    assert len(codes) == ranks, r.stderr
    err = [line for line in r.stderr.splitlines() if not line.startswith("rank exit ")]
    return codes, err, r.stdout


def refused(args, *patterns, ranks=2):
    codes, err, out = launch(args, ranks)
    assert codes == [2] * ranks, (codes, err, out)
    assert len(err) == 1 and err[0].startswith("minictx: error: "), err
    for p in patterns:
        assert p in err[0], (p, err[0])
    print(err[0])
    return out


def profile_with(tmp, name, old, new):
    with open(PROFILE) as f:
        text = f.read()
    assert old in text, old
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))
    return path


def project(machine, *extra):
    return ["project", DECK, "--machine", machine, "--ranks", "16"] + RING + list(extra)


def profiles(tmp):
    for value in ("0.5", "0", "1e12", "many"):
        path = profile_with(tmp, "devices", "devices: 8", "devices: " + value)
        refused(project(path), path, "projection.node.devices")
    path = profile_with(tmp, "peak", "bf16: 312", "bf16: fast")
    refused(project(path), path, "peak_tflops.bf16 must be a number, got 'fast'")
    refused(project("no-such-machine"), "profile not found (available: ", "a100-80gb-hdr", "generic-cpu")
    existing = os.path.join(tmp, "p.h5")
    open(existing, "w").close()
    refused(project("a100-80gb-hdr", "-o", existing), existing, "exists")


def bench_file(tmp):
    """A small calibration in `minictx bench`'s layout: one head dim, one length, one mask."""
    path = os.path.join(tmp, "bench.h5")
    text = h5py.string_dtype()
    with h5py.File(path, "w") as f:
        g = f.create_group("bench")
        g.attrs["calibration_gflops"] = 50.0
        g.attrs["calibration_after_gflops"] = 50.0
        g.create_dataset("kind", data=["attn_fwd", "attn_fwd_bwd", "gemm"], dtype=text)
        g.create_dataset("kernel", data=["flash", "flash", "sgemm"], dtype=text)
        g["seq_len"] = [64.0, 64.0, 1024.0]
        g["head_dim"] = [32.0, 32.0, 0.0]
        g["seconds"] = [1e-4, 3.5e-4, 4e-2]
        g["gflops"] = [20.0, 18.0, 50.0]
        g["calibration_gflops"] = [50.0, 50.0, 50.0]
        g.create_dataset("causal", data=[1, 1, 0], dtype="int8")
        g["bytes"] = [0.0, 0.0, 0.0]
    codes, err, _ = launch(project("a100-80gb-hdr", "--calibration", path))
    assert codes == [0, 0], err  # the undamaged file is taken
    return path


def damaged_copy(original, tmp, name, damage):
    path = os.path.join(tmp, name + ".h5")
    shutil.copy(original, path)
    with h5py.File(path, "r+") as f:
        damage(f)
    return path


def calibrations(tmp):
    good = bench_file(tmp)

    def shorter(f):
        seconds = f["bench/seconds"][:-1]
        del f["bench/seconds"]
        f["bench/seconds"] = seconds

    path = damaged_copy(good, tmp, "short", shorter)
    refused(project("a100-80gb-hdr", "--calibration", path), path, "bench/seconds has", "equally long")

    def negative(f):
        g = f.create_group("comm")
        g.attrs["intra_latency_us"] = 2.0
        g.attrs["intra_bandwidth_gb_s"] = -5.0

    path = damaged_copy(good, tmp, "negative", negative)
    refused(project("a100-80gb-hdr", "--calibration", path), path, "comm/intra_bandwidth_gb_s", "positive")

    def slow_start(f):
        f["bench"].create_group("unused")
        f["comm"] = 1  # a dataset where a group belongs

    path = damaged_copy(good, tmp, "wrong_type", slow_start)
    refused(project("a100-80gb-hdr", "--calibration", path), path)

    def negative_latency(f):
        g = f.create_group("comm")
        g.attrs["inter_latency_us"] = -1.0
        g.attrs["inter_bandwidth_gb_s"] = 25.0

    path = damaged_copy(good, tmp, "latency", negative_latency)
    refused(project("a100-80gb-hdr", "--calibration", path), path, "comm/inter_latency_us", "positive")
    empty = os.path.join(tmp, "empty.h5")
    open(empty, "w").close()
    refused(project("a100-80gb-hdr", "--calibration", empty), empty)
    text = os.path.join(tmp, "notes.txt")
    with open(text, "w") as f:
        f.write("not hdf5\n")
    refused(project("a100-80gb-hdr", "--calibration", text), text)


def report(tmp):
    results = os.path.join(tmp, "r.h5")
    r = subprocess.run([minictx, "run"] + RING[:2] + ["--set", "attention.backend=local", "--set",
                       "run.mode=attention", "--set", "run.iters=1", "--set", "run.warmup=0", "--set",
                       "sequence.length=[128,256,384]", "-o", results], capture_output=True, text=True,
                       timeout=LIMIT_S)
    assert r.returncode == 0, r.stderr
    with h5py.File(results, "r+") as f:
        f["points/point_0001/labels"].attrs["world_size"] = "two"
        f["points/point_0002/labels"].attrs["batch"] = "1x"
    for columns, lost in (("usp", ["point_0001"]), ("mpt", ["point_0002"])):
        codes, err, out = launch(["report", results, "--columns", columns], ranks=1)
        assert codes == [0], (codes, err)
        assert len(err) == len(lost), err
        for name, line in zip(lost, err):
            assert line.startswith("minictx: warning: %s: label " % name) and "not a number" in line, line
        rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
        assert len(rows) == 1 + 3 - len(lost), out  # the header and the good points
        print(err)
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    start = time.monotonic()
    refused(["report", "--compare", results, fifo], fifo, "is a FIFO", ranks=1)
    assert time.monotonic() - start < 10, "report --compare waited on a FIFO"
    text = os.path.join(tmp, "notes.txt")
    with open(text, "w") as f:
        f.write("not hdf5\n")
    refused(["report", "--compare", results, text], text, ranks=1)
    projected = os.path.join(tmp, "p.h5")
    r = subprocess.run([minictx, "project", DECK, "--machine", "a100-80gb-hdr", "--ranks", "4", "--ranks-per-node",
                        "2", "--set", "attention.backend=ring", "--set", "run.mode=attention", "--set",
                        "sequence.length=[128,256,384]", "-o", projected], capture_output=True, text=True,
                       timeout=LIMIT_S)
    assert r.returncode == 0, r.stderr
    refused(["report", "--compare", results, projected], "ran 1 ranks per node", "do not compare", ranks=1)
    refused(["run", DECK, "--set", "attention.backend=ring", "--set", "run.mode=attention", "--set",
             "sequence.length=[128,256,384]", "-o", projected, "--resume"], "it is a projection")


def launches(tmp):
    deck = os.path.join(source, "inputs", "usp-8dev.yaml")
    out = os.path.join(tmp, "usp.h5")
    refused(["run", deck, "-o", out], "none of the deck's 72 points runs on 2 ranks",
            "topology.world_size is 8 but this run has 2 ranks")
    assert not os.path.exists(out), "a run where nothing runs wrote a file"
    listing = refused(["run", deck, "--dry-run", "--ranks", "16"], "none of the deck's 72 points runs on 16 ranks")
    assert "72 skipped" in listing, listing
    # A legal name that leaves no room for the scratch suffix: refused before any point,
    # saying how long a name may be here.
    long_name = os.path.join(tmp, "r" * 247 + ".h5")
    refused(["run", DECK, "-o", long_name] + RING, "the name is too long; its scratch file adds",
            "names in its directory hold at most 255 bytes")
    # Every writer checks its name before any work, and every rank of four exits 2.
    refused(["bench", "--comm", "-o", long_name], "results file " + long_name + ": the name is too long", ranks=4)
    refused(["verify", DECK, "--dump", long_name] + RING, "--dump " + long_name + ": the name is too long", ranks=4)
    assert os.listdir(tmp) == [], os.listdir(tmp)
    if "cuda" not in subprocess.run([minictx, "list"], capture_output=True, text=True).stdout.split("comms:")[0]:
        # A GPU deck on a host-only build (a login node) is checked all the same, naming the build that runs it.
        dry = subprocess.run([minictx, "run", DECK, "--dry-run", "--set", "run.device=cuda"] + RING,
                             capture_output=True, text=True)
        assert dry.returncode == 0 and "runs with another build: device 'cuda'" in dry.stdout, dry.stdout + dry.stderr


with tempfile.TemporaryDirectory() as tmp:
    {"profiles": profiles, "calibrations": calibrations, "report": report, "launches": launches}[mode](tmp)
print("hostile inputs ok")
