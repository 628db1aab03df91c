#!/usr/bin/env python3
"""A benchmark class deck (inputs/benchmark/NAME.yaml) is one point that runs at the device
count it names, on any node shape: `minictx run DECK --dry-run --ranks N --ranks-per-node M`
exits 0 with the point runnable, none skipped or refused, for 4 and for 8 ranks per node (a
GPU class names no ranks per node: that is the machine's) or the twin's own. A build without
the deck's device checks the point all the same (the backend on that topology, the memory
estimate against the deck's machine profile's device) and names the build that runs it. A
GPU class also fits an 80 GB device: `minictx project` on the H100 and A100 profiles says
`fits: yes`.

  check_benchmark_class.py MINICTX DECK"""
import re
import subprocess
import sys

minictx, deck = sys.argv[1], sys.argv[2]
text = open(deck).read()


def value(key, default=None):
    """The value of `  key: value` in the deck (every key here appears once)."""
    m = re.search(rf"^\s+{key}:\s*(\S+)\s*$", text, re.M)
    assert m or default is not None, f"the class deck names no {key}"
    return m.group(1) if m else default


ranks = int(value("world_size"))
assert ranks >= 1, "a class deck names its device count"
name = deck.rsplit("/", 1)[-1].removesuffix(".yaml")
assert value("class") == name, f"benchmark.class {value('class')} is not the file's name {name}"
assert int(value("verify_length")) > 0, "a class names its verification scale"
gpu = value("device") == "cuda"
if gpu:
    assert value("ranks_per_node", "none") == "none", "a GPU class leaves the ranks per node to the machine"
    shapes = sorted({min(ranks, n) for n in (4, 8)})
else:
    shapes = [int(value("ranks_per_node"))]


def dry_run(per_node, *sets):
    """The dry run at the class's ranks: exits 0 with its one point runnable; where this
    build lacks the deck's device, checked against the machine profile's device."""
    run = subprocess.run([minictx, "run", deck, *sets, "--dry-run", "--ranks", str(ranks), "--ranks-per-node",
                          str(per_node)], capture_output=True, text=True)
    print(run.stdout + run.stderr)
    nodes = (ranks + per_node - 1) // per_node
    summary = re.search(rf"^dry run: 1 points, 1 run on {ranks} ranks, 0 skipped\nnodes: {nodes} of {per_node} ranks$",
                        run.stdout, re.M)
    assert run.returncode == 0 and summary, "the class is one point that runs"
    assert re.search(r"^point_0000 \S+: runs, memory estimate \d+ MiB per rank, within the \d+ MiB of ", run.stdout,
                     re.M), "the memory estimate checked against the class's device"
    unbuilt = "runs with another build: device 'cuda' is not compiled into this build"
    assert (unbuilt in run.stdout) == (gpu and "cuda" not in subprocess.run(
        [minictx, "list"], capture_output=True, text=True).stdout.split("devices:")[1].split("comms:")[0])


for per_node in shapes:
    dry_run(per_node)
    # The verification run of the class expands too, at the class's verification scale.
    dry_run(per_node, "--set", "benchmark.role=verification")

if gpu:
    for machine in ("h100-sxm-ndr", "a100-80gb-hdr"):
        p = subprocess.run([minictx, "project", deck, "--machine", machine], capture_output=True, text=True)
        print(p.stdout + p.stderr)
        assert p.returncode == 0, p.returncode
        fits = re.findall(r"\| (yes|no) \|\s*$", p.stdout, re.M)
        assert fits == ["yes"], f"{machine}: fits {fits}"
print(f"class ok: {name} on {ranks} ranks, {' and '.join(map(str, shapes))} per node")
