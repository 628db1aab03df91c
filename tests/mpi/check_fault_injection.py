#!/usr/bin/env python3
"""All or nothing, on the host: the test seam MINICTX_INJECT_FAULT=RANK:STAGE[:POINT] makes
rank 1 of a 2-rank sweep of two ring points fail at each stage in turn, one launch each:

- gpu:     creating the device (a GPU that cannot be used);
- comm:    the world comm's start (NCCL's init; a barrier on MPI) reports an error;
- shift:1: the first ring shift of the second point reports an error, as NCCL's
           asynchronous error would.

Each launch must exit 2 (the launcher's status and MINICTX_STATUS_FILE) within
run.watchdog_seconds + 10 s, with exactly one line of minictx's own, naming rank 1 and
what failed; a failure at the start writes no results file, one at the second point
leaves the first point readable by `minictx report`.

  check_fault_injection.py MINICTX MPIEXEC"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_support import own_lines, points_in  # noqa: E402

minictx, mpiexec = sys.argv[1], sys.argv[2]
LIMIT_S = 2
END_WITHIN_S = LIMIT_S + 10

CASES = [
    ("1:gpu", r"minictx: error: rank 1: the device could not be initialised \(injected by MINICTX_INJECT_FAULT\)$", []),
    ("1:comm", r"minictx: error: rank 1: the comm could not be started \(injected by MINICTX_INJECT_FAULT\) in "
     r"MPI_Ibarrier of the comm's start \(group of 2 ranks \(0,1\)\)$", []),
    ("1:shift:1", r"minictx: error: rank 1: the transfer failed \(injected by MINICTX_INJECT_FAULT\) in MPI_Waitall "
     r"of a ring shift \(send to rank 0, receive from rank 0\) at point_0001 sequence.length=512; aborting the job$",
     ["point_0000"]),
]

failures = []
with tempfile.TemporaryDirectory() as tmp:
    for fault, expected, points in CASES:
        results, status = os.path.join(tmp, fault.replace(":", "_") + ".h5"), os.path.join(tmp, "status")
        if os.path.exists(status):
            os.remove(status)
        env = dict(os.environ, MINICTX_INJECT_FAULT=fault, MINICTX_STATUS_FILE=status)
        command = [mpiexec, "-n", "2", minictx, "run", "--set", "run.mode=attention", "--set",
                   "attention.backend=ring", "--set", "sequence.length=[256,512]", "--set", "run.iters=1", "--set",
                   "run.warmup=0", "--set", f"run.watchdog_seconds={LIMIT_S}", "-o", results]
        start = time.monotonic()
        run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             timeout=120)
        took = time.monotonic() - start
        lines = [line for line in own_lines(run.stdout) if line.startswith("minictx:")]
        recorded = open(status).read().strip() if os.path.exists(status) else "none"
        print(f"== {fault}: exit {run.returncode}, status file {recorded}, {took:.1f} s\n{run.stdout}")
        problems = []
        if run.returncode != 2 or recorded != "2":
            problems.append(f"exit {run.returncode}, status file {recorded}; expected 2 and 2")
        if took > END_WITHIN_S:
            problems.append(f"took {took:.1f} s, more than {END_WITHIN_S} s")
        if len(lines) != 1 or not re.match(expected, lines[0]):
            problems.append(f"expected one line matching /{expected}/, got {lines}")
        if points_in(results) != points:
            problems.append(f"points in the file {points_in(results)}, expected {points}")
        if points:
            report = subprocess.run([minictx, "report", results, "--format", "csv"], capture_output=True, text=True)
            if report.returncode != 0 or len(report.stdout.strip().splitlines()) != 1 + len(points):
                problems.append(f"report of the kept points: exit {report.returncode}\n{report.stdout}{report.stderr}")
        failures += [f"{fault}: {p}" for p in problems]

for f in failures:
    print("FAILED:", f)
if not failures:
    print("fault injection ok")
