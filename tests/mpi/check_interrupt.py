#!/usr/bin/env python3
"""A killed sweep: start a 3-point sweep under mpiexec, wait until the results file holds
its first point, then stop it, read every completed point (h5py and `minictx report`),
and finish it with `--resume`.

  check_interrupt.py MINICTX MPIEXEC term-mpiexec | term-one-rank | kill

term-mpiexec: SIGTERM to mpiexec, which forwards it to every rank (Ctrl-C, scancel).
term-one-rank: SIGTERM to rank 1 alone; the ranks must agree to stop, none may hang.
kill: SIGKILL to every rank and to mpiexec (a batch system's hard kill).
In every mode the ranks restart themselves for OpenBLAS's kernels (forced) and must still
be listed by `ps -C minictx`.
Nothing here waits on a clock: the kill comes once the first point is in the file, and
the second point runs 100 iterations (seconds), so it is still running when the signal
reaches the ranks (Open MPI's mpiexec passes SIGTERM on a second after it gets it)."""
import os
import signal
import subprocess
import sys
import tempfile
import time

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_support import points_in, rank_pids  # noqa: E402

minictx, mpiexec, mode = sys.argv[1], sys.argv[2], sys.argv[3]
POLL_LIMIT_S = 300  # a generous bound for a loaded machine, never the pass criterion


with tempfile.TemporaryDirectory() as tmp:
    results = os.path.join(tmp, "sweep.h5")
    command = [mpiexec, "-n", "2", minictx, "run", "--set", "run.mode=attention", "--set", "attention.backend=ring",
               "--set", "sequence.length=[256,1024,256]", "--set", "run.iters=[1,100,1]", "--set",
               "run.warmup=0", "--set", "sweep.zip=[sequence.length,run.iters]", "-o", results]
    # The ranks restart themselves for OpenBLAS's kernels on a CPU it does not know; forced
    # here, so that their name after the restart is checked on every machine.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "MINICTX_BLAS_DETECTED_CORE")}
    env["MINICTX_TEST_BLAS_RESTART"] = "1"
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + POLL_LIMIT_S
    while not points_in(results):
        assert run.poll() is None, "the sweep ended before its first point:\n" + run.stdout.read()
        assert time.monotonic() < deadline, "no point after %d s" % POLL_LIMIT_S
        time.sleep(0.05)
    first = points_in(results)
    assert first == ["point_0000"], first
    with h5py.File(results, "r") as f:
        first_latency = f["points/point_0000/metrics"].attrs["latency_ms"]

    ranks = rank_pids(results)
    assert len(ranks) == 2, ranks
    # Every rank, restarted, still runs as minictx: `ps -C minictx` lists it.
    for pid in ranks.values():
        with open(f"/proc/{pid}/environ", "rb") as f:
            assert b"MINICTX_BLAS_DETECTED_CORE=" in f.read(), f"rank {pid} did not restart"
    listed = subprocess.run(["ps", "-C", "minictx", "-o", "pid="], capture_output=True, text=True).stdout.split()
    assert set(ranks.values()) <= {int(p) for p in listed}, (ranks, listed)
    if mode == "term-mpiexec":
        run.send_signal(signal.SIGTERM)
    elif mode == "term-one-rank":
        os.kill(ranks[1], signal.SIGTERM)
    elif mode == "kill":
        for pid in ranks.values():
            os.kill(pid, signal.SIGKILL)
        run.send_signal(signal.SIGKILL)
    else:
        sys.exit("unknown mode " + mode)
    output = run.communicate(timeout=POLL_LIMIT_S)[0]
    print(output)

    if mode != "kill":
        assert "sweep interrupted with 1 of 3 points" in output, output
        assert "--resume" in output, output
        assert "FOM" in output and output.count("FOM") == 1, output
        if mode == "term-one-rank":
            assert run.returncode == 128 + signal.SIGTERM, run.returncode
    else:
        assert run.returncode != 0

    # Every completed point is readable, by h5py and by the report.
    assert points_in(results) == ["point_0000"], points_in(results)
    with h5py.File(results, "r") as f:
        assert f["points/point_0000/metrics"].attrs["latency_ms"] == first_latency
        assert f["points/point_0000/iter_seconds"].shape == (1, 2)
    report = subprocess.run([minictx, "report", results, "--format", "csv"], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert len(report.stdout.strip().splitlines()) == 2, report.stdout  # header + one point

    # --resume keeps the completed point and runs the other two.
    resumed = subprocess.run(command + ["--resume"], capture_output=True, text=True, timeout=POLL_LIMIT_S)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "in the file already (--resume)" in resumed.stdout, resumed.stdout
    assert resumed.stdout.count("FOM") == 2, resumed.stdout
    assert points_in(results) == ["point_0000", "point_0001", "point_0002"], points_in(results)
    with h5py.File(results, "r") as f:
        assert f["points/point_0000/metrics"].attrs["latency_ms"] == first_latency
        assert f["points/point_0001/iter_seconds"].shape == (100, 2)
        assert f["provenance"].attrs["resumed_points"] == 1
print("interrupt ok:", mode)
