#!/usr/bin/env python3
"""Every deck in inputs/ expands and every point of it runs at the scale the deck says:
`minictx run DECK --dry-run --ranks N` must exit 0 with no point skipped (a deck whose
run.device this build lacks, a CUDA deck on a host-only build, is checked all the same and
names the build that runs it). N is the rank count of the deck's own usage line
("mpiexec -n N", or "--ntasks-per-node=N" times "-N NODES", which also sets the ranks per
node), 1 when it has none.

  check_deck.py MINICTX DECK"""
import re
import subprocess
import sys

minictx, deck = sys.argv[1], sys.argv[2]
text = open(deck).read()
ranks, per_node = 1, []
if m := re.search(r"mpiexec -n (\d+)", text):
    ranks = int(m.group(1))
elif m := re.search(r"--ntasks-per-node=(\d+)", text):
    nodes = re.search(r"sbatch -N (\d+)", text)
    ranks = int(m.group(1)) * (int(nodes.group(1)) if nodes else 1)
    per_node = ["--ranks-per-node", m.group(1)]
run = subprocess.run([minictx, "run", deck, "--dry-run", "--ranks", str(ranks)] + per_node,
                     capture_output=True, text=True)
print(run.stdout + run.stderr)
summary = re.search(r"dry run: (\d+) points, (\d+) run on (\d+) ranks, (\d+) skipped", run.stdout)
assert summary, "no summary line"
assert summary.group(4) == "0", "points skipped at the deck's own scale"
assert run.returncode == 0, run.returncode
print(f"deck ok: {deck} ({summary.group(1)} points on {ranks} ranks)")
