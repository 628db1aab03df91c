#!/usr/bin/env python3
"""A benchmark class deck (inputs/benchmark/NAME.yaml) is one point that runs at the rank
count it names: `minictx run DECK --dry-run --ranks N --ranks-per-node M` exits 0 with the
point runnable, none skipped or refused. A build without the deck's device checks the
point as far as it can (every check but the device's own: the summary then names the one
point "not runnable with this build" and nothing else). A GPU class also fits an 80 GB
device: `minictx project` on the H100 and A100 profiles says `fits: yes`.

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


def dry_run(*sets):
    """The dry run at the class's ranks: exits 0 with its one point runnable, or, where this
    build lacks the deck's device, exits 2 saying only that."""
    run = subprocess.run([minictx, "run", deck, *sets, "--dry-run", "--ranks", str(ranks), "--ranks-per-node",
                          str(per_node)], capture_output=True, text=True)
    print(run.stdout + run.stderr)
    summary = re.search(r"^dry run: (\d+) points, (\d+) run on (\d+) ranks, (\d+) skipped(.*)$", run.stdout, re.M)
    assert summary and summary.group(1) == "1" and summary.group(4) == "0", "the class is one point, not skipped"
    unbuilt = summary.group(5) == ", 1 not runnable with this build"
    if unbuilt:
        assert run.returncode == 2 and value("device") == "cuda", run.returncode
    else:
        assert run.returncode == 0 and summary.group(2) == "1" and summary.group(5) == "", summary.group(0)


dry_run()

if value("device") == "cuda":
    for machine in ("h100-sxm-ndr", "a100-80gb-hdr"):
        p = subprocess.run([minictx, "project", deck, "--machine", machine], capture_output=True, text=True)
        print(p.stdout + p.stderr)
        assert p.returncode == 0, p.returncode
        fits = re.findall(r"\| (yes|no) \|\s*$", p.stdout, re.M)
        assert fits == ["yes"], f"{machine}: fits {fits}"
# The verification run of the class expands too, at the class's verification scale.
dry_run("--set", "benchmark.role=verification")
print(f"class ok: {name} on {ranks} ranks, {per_node} per node")
