#!/usr/bin/env python3
"""The memory guard divides a node's memory by the ranks really on it (MPI's shared-memory
communicator), never by the emulation key topology.ranks_per_node; and `run --dry-run`
says "would be refused here" for the point the real run on this host refuses.

The point is sized from this host's memory (the dry run prints the capacity): about 0.4
of it per rank, so 4 ranks on this node need 1.6 times the node and must be refused,
while a guard that believed ranks_per_node=1 would let them allocate.

  check_guards.py MPIEXEC MINICTX"""
import re
import subprocess
import sys

mpiexec, minictx = sys.argv[1], sys.argv[2]
base = ["--set", "run.mode=attention", "--set", "attention.backend=ring", "--set", "topology.ranks_per_node=1"]


def dry(length, *extra):
    out = subprocess.run([minictx, "run", "--dry-run", "--ranks", "4", *extra, *base, "--set",
                          f"sequence.length={length}"], capture_output=True, text=True, check=True).stdout
    return out


# The estimate grows linearly with the length in attention mode: scale one probe.
probe = 65536
one_node = dry(probe, "--ranks-per-node", "1")
mib = float(re.search(r"memory estimate (\d+) MiB", one_node).group(1))
node = subprocess.run([minictx, "run", "--dry-run", "--ranks-per-node", "1", *base, "--set",
                       "sequence.length=1000000000000"], capture_output=True, text=True, check=True).stdout
node_mib = float(re.search(r"exceeds the (\d+) MiB", node).group(1))
length = int(probe * 0.4 * node_mib / mib) // 4096 * 4096
print(f"node {node_mib:.0f} MiB; length {length}: estimate about {0.4 * node_mib:.0f} MiB per rank")

emulated = dry(length, "--ranks-per-node", "1")
assert re.search(r"point_0000 ring: runs, memory estimate", emulated), emulated
here = dry(length)
assert "point_0000 ring: would be refused here: memory estimate" in here, here
assert "1 would be refused here" in here, here
print("dry run: one node per rank runs, 4 ranks here would be refused")

run = subprocess.run([mpiexec, "-n", "4", minictx, "run", "-o", "/nonexistent/never-written.h5", *base, "--set",
                      f"sequence.length={length}"], capture_output=True, text=True, timeout=120)
errors = [l for l in run.stderr.splitlines() if l.startswith("minictx: error:")]
print(run.stderr.strip())
assert run.returncode == 2, run.returncode
assert len(errors) == 1 and "exceeds the" in errors[0], errors
print("guards ok")
