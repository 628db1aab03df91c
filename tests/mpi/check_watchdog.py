#!/usr/bin/env python3
"""The watchdog: one rank of a 2-rank sweep is stopped (SIGSTOP) while the second point
runs; the other rank must give up after run.watchdog_seconds in the call it waits in,
print one line naming itself, the call, the peer and the point, and abort the job. The
completed first point stays readable, and --resume finishes the sweep.

  check_watchdog.py MINICTX MPIEXEC"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_support import points_in, rank_pids, stop_rank_and_wait  # noqa: E402

minictx, mpiexec = sys.argv[1], sys.argv[2]
LIMIT_S = 5
# The abort must come within the limit plus the job's teardown; the margin allows for a
# loaded machine and is far below the run's own length.
END_WITHIN_S = LIMIT_S + 25
POLL_LIMIT_S = 300


with tempfile.TemporaryDirectory() as tmp:
    results = os.path.join(tmp, "sweep.h5")
    # The second point runs 40 iterations of 2048 tokens, about 0.1 s each on a quiet 2-core
    # VM (1024 tokens took 23 ms, and that point could end within the second waited below):
    # still running a second after the first point is in the file.
    command = [mpiexec, "-n", "2", minictx, "run", "--set", "run.mode=attention", "--set", "attention.backend=ring",
               "--set", "sequence.length=[256,2048,256]", "--set", "run.iters=[1,40,1]", "--set",
               "run.warmup=0", "--set", "sweep.zip=[sequence.length,run.iters]", "--set",
               f"run.watchdog_seconds={LIMIT_S}", "-o", results]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + POLL_LIMIT_S
        while not points_in(results):
            assert run.poll() is None, "the sweep ended before its first point:\n" + run.stdout.read()
            assert time.monotonic() < deadline, "no point after %d s" % POLL_LIMIT_S
            time.sleep(0.05)
        time.sleep(1)  # into the second point's iterations, past its set-up
        ranks = rank_pids(results)
        assert sorted(ranks) == [0, 1], ranks
        output, ended = stop_rank_and_wait(run, ranks[1], POLL_LIMIT_S)
    finally:
        if run.poll() is None:
            run.kill()
    print(output)
    print(f"the job ended {ended:.1f} s after rank 1 was stopped (limit {LIMIT_S} s)")
    assert run.returncode != 0, run.returncode
    assert ended < END_WITHIN_S, ended
    lines = [l for l in output.splitlines() if l.startswith("minictx: watchdog:")]
    assert len(lines) == 1, lines
    assert re.match(r"minictx: watchdog: rank 0 waited [\d.]+ s in MPI_\w+.*\((send to rank 1, receive from rank 1|"
                    r"group of 2 ranks \(0,1\))\) at point_0001 sequence.length=2048 run.iters=40; aborting the job \(run.watchdog_seconds = 5 s\)$",
                    lines[0]), lines[0]

    # The completed point is readable, by h5py and by the report, and --resume finishes.
    assert points_in(results) == ["point_0000"], points_in(results)
    report = subprocess.run([minictx, "report", results, "--format", "csv"], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert len(report.stdout.strip().splitlines()) == 2, report.stdout
    resumed = subprocess.run(command + ["--resume"], capture_output=True, text=True, timeout=POLL_LIMIT_S)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert resumed.stdout.count("FOM") == 2, resumed.stdout
    assert points_in(results) == ["point_0000", "point_0001", "point_0002"], points_in(results)
print("watchdog ok")
