#!/usr/bin/env python3
"""Profiler regions end to end: one 4-rank launch of a zigzag ring in model mode (full
checkpointing: forward, recompute and backward walks) with run.ring_timeline, under the tests'
own Kokkos Tools library (tests/kokkos_tools/region_recorder.cpp), loaded the way Kokkos reads
it (KOKKOS_PROFILE_LIBRARY in Kokkos 3, KOKKOS_TOOLS_LIBS in Kokkos 4). Every rank's report
must say its regions were balanced (none closed unopened, none left open, every section
stopped); the regions besides the ring walk's must be the phases of the results file, each
opened as often as the file's ring_timeline/phases has scopes of it for that rank, nested
as the run nests them; ring_step, ring_wait and ring_transfer as often as the ring timeline
has steps (and steps that move a block) in each of the timed iterations. The results file
stays at OUT.h5 for report_trace.

  check_profiler_regions.py MINICTX MPIEXEC RECORDER_LIBRARY OUT.h5"""
import glob
import os
import subprocess
import sys
from collections import Counter

import h5py

minictx, mpiexec, recorder, out = sys.argv[1:5]
RANKS, ITERS = 4, 2
RING = {"ring_step", "ring_wait", "ring_outer_wait"}
# Where each region may open: the run's scopes (model/layer_stack.cpp) and the walk's.
PARENTS = {"forward": {"(top)"}, "backward": {"(top)"}, "recompute": {"backward"},
           "attention_fwd": {"forward", "recompute"}, "attention_bwd": {"backward"},
           "gemm_fwd": {"forward", "recompute"}, "gemm_bwd": {"backward", "forward"},
           "grad_allreduce": {"backward"}, "grad_check": {"backward"},
           "ring_step": {"attention_fwd", "attention_bwd"}, "ring_wait": {"ring_step"}}

os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
for stale in [out, out + ".journal"] + glob.glob(out + ".regions.*"):
    if os.path.exists(stale):
        os.remove(stale)
env = dict(os.environ, KOKKOS_PROFILE_LIBRARY=recorder, KOKKOS_TOOLS_LIBS=recorder,
           MINICTX_REGION_LOG=out + ".regions")
args = [mpiexec, "-n", str(RANKS), minictx, "run", "inputs/quickstart.yaml", "-o", out]
for s in ["attention.backend=ring", "attention.ring_type=zigzag", "sequence.length=1024",
          "run.checkpointing=full", "run.warmup=0", f"run.iters={ITERS}", "run.ring_timeline=true",
          "machine.profile=generic-cpu"]:
    args += ["--set", s]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=root)
assert done.returncode == 0, done.stdout + done.stderr

reports = sorted(glob.glob(out + ".regions.*"))
assert len(reports) == RANKS, f"{len(reports)} region reports for {RANKS} ranks: the library was not loaded"
with h5py.File(out, "r") as f:
    p = f["points/point_0000"]
    phases = p["ring_timeline/phases"]
    prank, pname = phases["rank"][:], phases["phase"].asstr()[:]
    t = p["ring_timeline"]
    srank, moved = t["rank"][:], t["transfer_posted"][:] == t["transfer_posted"][:]
    timed = {k for k in p["phase_seconds"] if p["phase_seconds"][k][:].sum() > 0}
assert set(pname) == timed, (sorted(set(pname)), sorted(timed))

# The reports do not say which rank wrote them: each must match one rank's records.
want = {}
for r in range(RANKS):
    want[r] = (Counter(pname[prank == r]), ITERS * int((srank == r).sum()), ITERS * int((moved & (srank == r)).sum()))
matched = set()
for path in reports:
    lines = open(path).read().splitlines()
    assert lines[0] == "regions balanced", f"{path}: {lines[0]}"
    opened, sections = Counter(), Counter()
    for line in lines[1:]:
        kind, *rest = line.split()
        if kind == "region":
            parent, _, name, count = rest
            assert parent in PARENTS.get(name, {"(top)"}), f"{path}: {name} opened inside {parent}"
            opened[name] += int(count)
        else:
            sections[rest[0]] += int(rest[1])
    phase_regions = Counter({k: v for k, v in opened.items() if k not in RING})
    ranks = [r for r, (ph, steps, transfers) in want.items()
             if ph == phase_regions and opened["ring_step"] == steps and opened["ring_wait"] == transfers
             and sections["ring_transfer"] == transfers and r not in matched]
    assert ranks, f"{path}: regions {dict(opened)} sections {dict(sections)} match no rank's records {want}"
    matched.add(ranks[0])
print(f"{RANKS} ranks: regions balanced, named and counted as the results file's phases and ring steps")
print("regions ok")
