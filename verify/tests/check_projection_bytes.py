#!/usr/bin/env python3
"""`minictx project` must send the bytes the run sends and report the memory the run's
estimate gives: for each backend and layout, and the model under each checkpointing
policy, one timed step on 2 ranks (as 2 emulated nodes where it matters, so both link
classes are checked) against its projection on the same world size: bytes intra- and
inter-node per device must be equal (to rounding), and the projected peak memory must be
`minictx run --dry-run`'s estimate.

  check_projection_bytes.py MPIEXEC MINICTX"""
import subprocess
import sys
import tempfile

import h5py

mpiexec, minictx = sys.argv[1], sys.argv[2]
attn = ["--set", "run.mode=attention", "--set", "sequence.length=998", "--set", "model.kv_heads=4"]
model = ["--set", "run.mode=model", "--set", "model.preset=tiny", "--set", "model.layers=2",
         "--set", "sequence.length=301", "--set", "sequence.batch=2"]
cases = []
for ring_type in ("basic", "zigzag", "stripe"):
    cases.append((2, attn + ["--set", "attention.backend=ring", "--set", f"attention.ring_type={ring_type}",
                             "--set", "topology.ranks_per_node=1"]))
cases += [
    (2, attn + ["--set", "attention.backend=ulysses", "--set", "topology.ranks_per_node=1"]),
    (2, attn + ["--set", "attention.backend=allgather", "--set", "topology.ranks_per_node=1"]),
    (2, attn + ["--set", "attention.backend=usp", "--set", "attention.ulysses_degree=2", "--set", "run.fwd_only=true"]),
    (2, attn + ["--set", "attention.backend=double_ring", "--set", "attention.window_size=1",
                "--set", "topology.ranks_per_node=1"]),
    (2, attn + ["--set", "attention.backend=burst", "--set", "topology.ranks_per_node=1"]),
    (2, attn + ["--set", "attention.backend=burst", "--set", "attention.bwd_comm=kv", "--set", "topology.ranks_per_node=1"]),
    # Two levels on 4 ranks as 2 nodes: inner rings inside the nodes, outer across.
    (4, attn + ["--set", "attention.backend=burst", "--set", "attention.ring_type=zigzag",
                "--set", "topology.ranks_per_node=2"]),
    (4, attn + ["--set", "attention.backend=burst", "--set", "attention.intra=ulysses",
                "--set", "topology.ranks_per_node=2"]),
]
for ckpt, ring_type in (("none", "zigzag"), ("full", "zigzag"), ("selective", "zigzag"), ("selective_half", "stripe")):
    cases.append((2, model + ["--set", "attention.backend=ring", "--set", f"attention.ring_type={ring_type}",
                              "--set", f"run.checkpointing={ckpt}", "--set", "topology.ranks_per_node=1"]))


def metrics(path):
    return dict(h5py.File(path, "r")["points/point_0000/metrics"].attrs)


ok = True
with tempfile.TemporaryDirectory() as tmp:
    for ranks, args in cases:
        label = f"{ranks} ranks " + " ".join(a.split("=", 1)[1] for a in args if a.startswith(("attention.", "run.c", "topology.")))
        subprocess.run([mpiexec, "-n", str(ranks), minictx, "run", "-o", f"{tmp}/m.h5", "--force", "--set",
                        "run.iters=1", "--set", "run.warmup=0"] + args, capture_output=True, text=True, check=True)
        subprocess.run([minictx, "project", "inputs/quickstart.yaml", "--machine", "a100-80gb-hdr", "--ranks", str(ranks),
                        "-o", f"{tmp}/p.h5", "--force"] + args, capture_output=True, text=True, check=True,
                       cwd=sys.argv[3])
        dry = subprocess.run([minictx, "run", "--dry-run", "--ranks", str(ranks)] + args, capture_output=True,
                             text=True, check=True).stdout
        estimate_mib = int(dry.split("memory estimate ")[1].split(" MiB")[0])
        m, p = metrics(f"{tmp}/m.h5"), metrics(f"{tmp}/p.h5")
        same = all(abs(m[k] - p[k]) <= 1e-9 * max(1.0, m[k])
                   for k in ("bytes_sent_intra_per_device", "bytes_sent_inter_per_device"))
        memory = int(p["peak_memory_mb"]) == estimate_mib
        ok &= same and memory
        # The report views: the verdict column says PROJECTED; --compare pairs the two
        # points and gives the byte ratios as exactly 1.
        summary = subprocess.run([minictx, "report", f"{tmp}/p.h5"], capture_output=True, text=True, check=True).stdout
        compare = subprocess.run([minictx, "report", f"{tmp}/m.h5", f"{tmp}/p.h5", "--compare"], capture_output=True,
                                 text=True, check=True).stdout
        row = compare.strip().splitlines()[-1].split("|")
        views = "PROJECTED" in summary and row[1].strip() == "point_0000" and all(
            c.strip() in ("1.000", "n/a") for c in row[13:15]) and any(c.strip() == "1.000" for c in row[13:15])
        if not views:
            print(summary, compare)
        ok &= views
        print(f"{label:70s} bytes intra {m['bytes_sent_intra_per_device']:.0f}/{p['bytes_sent_intra_per_device']:.0f} "
              f"inter {m['bytes_sent_inter_per_device']:.0f}/{p['bytes_sent_inter_per_device']:.0f} "
              f"memory {p['peak_memory_mb']:.1f} MiB vs estimate {estimate_mib} MiB "
              f"{'ok' if same and memory else 'MISMATCH'}")
print("projected bytes and memory match the run" if ok else "PROJECTION MISMATCH")
sys.exit(0 if ok else 1)
