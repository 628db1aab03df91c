#!/usr/bin/env python3
"""A benchmark class deck (inputs/benchmark/NAME.yaml) is one point that runs at the rank
count it names: `minictx run DECK --dry-run --ranks N --ranks-per-node M` exits 0 with the
point runnable, none skipped or refused. A GPU class also fits an 80 GB device: `minictx
project` on the H100 and A100 profiles says `fits: yes`.

  check_benchmark_class.py MINICTX DECK"""
import re
import subprocess
import sys

minictx, deck = sys.argv[1], sys.argv[2]
text = open(deck).read()


def value(key):
    """The value of `  key: value` in the deck (every key here appears once)."""
    m = re.search(rf"^\s+{key}:\s*(\S+)\s*$", text, re.M)
    assert m, f"the class deck names no {key}"
    return m.group(1)


ranks, per_node = int(value("world_size")), int(value("ranks_per_node"))
assert ranks >= 1 and per_node >= 1, "a class deck names its rank count and ranks per node"
name = deck.rsplit("/", 1)[-1].removesuffix(".yaml")
assert value("class") == name, f"benchmark.class {value('class')} is not the file's name {name}"
assert int(value("verify_length")) > 0, "a class names its verification scale"

run = subprocess.run([minictx, "run", deck, "--dry-run", "--ranks", str(ranks), "--ranks-per-node", str(per_node)],
                     capture_output=True, text=True)
print(run.stdout + run.stderr)
assert run.returncode == 0, run.returncode
summary = re.search(r"dry run: (\d+) points, (\d+) run on (\d+) ranks, (\d+) skipped(.*)", run.stdout)
assert summary and summary.group(1) == "1" and summary.group(2) == "1", "the class is one runnable point"
assert "refused" not in summary.group(5), "refused here"

if value("device") == "cuda":
    for machine in ("h100-sxm-ndr", "a100-80gb-hdr"):
        p = subprocess.run([minictx, "project", deck, "--machine", machine], capture_output=True, text=True)
        print(p.stdout + p.stderr)
        assert p.returncode == 0, p.returncode
        fits = re.findall(r"\| (yes|no) \|\s*$", p.stdout, re.M)
        assert fits == ["yes"], f"{machine}: fits {fits}"
# The verification run of the class expands too, at the class's verification scale.
v = subprocess.run([minictx, "run", deck, "--set", "benchmark.role=verification", "--dry-run", "--ranks", str(ranks),
                    "--ranks-per-node", str(per_node)], capture_output=True, text=True)
print(v.stdout + v.stderr)
assert v.returncode == 0 and ", 0 skipped" in v.stdout, v.returncode
print(f"class ok: {name} on {ranks} ranks, {per_node} per node")
