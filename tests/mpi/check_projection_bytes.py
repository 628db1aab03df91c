#!/usr/bin/env python3
"""`minictx project` must send the bytes the run sends and report the memory the run's
estimate gives: for each backend and layout, and the model under each checkpointing
policy, one timed step on 2 ranks (as 2 emulated nodes where it matters, so both link
classes are checked) against its projection on the same world size: bytes intra- and
inter-node per device must be equal (to rounding), and the projected peak memory must be
`minictx run --dry-run`'s estimate.

Cases with the same rank count, mode and emulated nodes are the points of one sweep: one
launch runs them, one `project` projects them, one dry run gives their estimates, and each
point is checked against its own projection.

  check_projection_bytes.py MPIEXEC MINICTX SOURCE_DIR"""
import subprocess
import sys
import tempfile

import h5py

from sweep_cases import dry_run_estimates, sweep_args

mpiexec, minictx, source = sys.argv[1], sys.argv[2], sys.argv[3]
attn = ["--set", "run.mode=attention", "--set", "sequence.length=998", "--set", "model.kv_heads=4"]
model = ["--set", "run.mode=model", "--set", "model.preset=tiny", "--set", "model.layers=2",
         "--set", "sequence.length=301", "--set", "sequence.batch=2"]
one_node_each = ["--set", "topology.ranks_per_node=1"]
# (ranks, common arguments, cases): a case sets the swept keys (sweep_cases.py).
groups = [
    (2, attn + one_node_each,
     [{"attention.backend": "ring", "attention.ring_type": t} for t in ("basic", "zigzag", "stripe")] +
     [{"attention.backend": "ulysses"}, {"attention.backend": "allgather"},
      {"attention.backend": "double_ring", "attention.window_size": "1"}, {"attention.backend": "burst"},
      {"attention.backend": "burst", "attention.bwd_comm": "kv"}]),
    (2, attn + ["--set", "attention.ulysses_degree=2", "--set", "run.fwd_only=true"], [{"attention.backend": "usp"}]),
    # Two levels on 4 ranks as 2 nodes: inner rings inside the nodes, outer across.
    (4, attn + ["--set", "attention.backend=burst", "--set", "topology.ranks_per_node=2"],
     [{"attention.ring_type": "zigzag"}, {"attention.intra": "ulysses"}]),
    # bf16: tensor data on the wire in 2 bytes, the Burst backward's LSE and D in 4.
    (2, attn + one_node_each + ["--set", "run.dtype=bf16"],
     [{"attention.backend": "ring", "attention.ring_type": "zigzag"}, {"attention.backend": "ulysses"},
      {"attention.backend": "allgather"}, {"attention.backend": "burst"}]),
    (2, model + one_node_each + ["--set", "attention.backend=ring"],
     [{"run.checkpointing": c, "attention.ring_type": t}
      for c, t in (("none", "zigzag"), ("full", "zigzag"), ("selective", "zigzag"), ("selective_half", "stripe"))]),
    # bf16 model: the weight gradients are fp32 (run.grad_reduce_dtype fp32, the default)
    # and so are their sums, or 16-bit with storage; the memory estimate follows them too.
    (2, model + one_node_each + ["--set", "run.dtype=bf16"],
     [{"attention.backend": "ring", "attention.ring_type": "zigzag"}, {"attention.backend": "ulysses"},
      {"attention.backend": "ring", "attention.ring_type": "zigzag", "run.grad_reduce_dtype": "storage"}]),
]


def run(command, **kw):
    return subprocess.run(command, capture_output=True, text=True, check=True, **kw).stdout


def points(path):
    with h5py.File(path, "r") as f:
        return [(dict(f["points"][n]["labels"].attrs), dict(f["points"][n]["metrics"].attrs))
                for n in sorted(f["points"].keys())]


ok = True
with tempfile.TemporaryDirectory() as tmp:
    for ranks, common, cases in groups:
        args = common + sweep_args(cases)
        run([mpiexec, "-n", str(ranks), minictx, "run", "-o", f"{tmp}/m.h5", "--force", "--set", "run.iters=1",
             "--set", "run.warmup=0"] + args)
        run([minictx, "project", "inputs/quickstart.yaml", "--machine", "a100-80gb-hdr", "--ranks", str(ranks), "-o",
             f"{tmp}/p.h5", "--force"] + args, cwd=source)
        dry = run([minictx, "run", "--dry-run", "--ranks", str(ranks)] + args)
        estimates = dry_run_estimates(dry)
        measured, projected = points(f"{tmp}/m.h5"), points(f"{tmp}/p.h5")
        assert len(measured) == len(projected) == len(estimates) == len(cases), (dry, measured, projected)
        # The report views: the verdict column says PROJECTED; --compare pairs each point
        # with its projection and gives the byte ratios as exactly 1.
        summary = run([minictx, "report", f"{tmp}/p.h5"]).splitlines()
        compare = {row[1].strip(): row for row in (line.split("|") for line in run(
            [minictx, "report", f"{tmp}/m.h5", f"{tmp}/p.h5", "--compare"]).splitlines()) if len(row) > 15}
        for i, ((ml, m), (pl, p), estimate_mib) in enumerate(zip(measured, projected, estimates)):
            name = f"point_{i:04d}"
            # checkpointing: model mode only (attention-mode points carry none)
            assert all(ml.get(k) == pl.get(k) for k in ("backend", "ring_type", "checkpointing")), (ml, pl)
            label = f"{ranks} ranks " + " ".join(list(cases[i].values()) + [a.split("=", 1)[1] for a in common if
                                                                            a.startswith(("attention.", "run.c", "run.d", "topology."))])
            same = all(abs(m[k] - p[k]) <= 1e-9 * max(1.0, m[k])
                       for k in ("bytes_sent_intra_per_device", "bytes_sent_inter_per_device"))
            memory = int(p["peak_memory_mb"]) == estimate_mib
            row = compare.get(name)
            views = any(line.startswith(f"| {name} ") and "PROJECTED" in line for line in summary) and \
                row is not None and all(c.strip() in ("1.000", "n/a") for c in row[13:15]) and \
                any(c.strip() == "1.000" for c in row[13:15])
            if not views:
                print("\n".join(summary), row)
            ok &= same and memory and views
            print(f"{label:70s} bytes intra {m['bytes_sent_intra_per_device']:.0f}/{p['bytes_sent_intra_per_device']:.0f} "
                  f"inter {m['bytes_sent_inter_per_device']:.0f}/{p['bytes_sent_inter_per_device']:.0f} "
                  f"memory {p['peak_memory_mb']:.1f} MiB vs estimate {estimate_mib} MiB "
                  f"{'ok' if same and memory and views else 'MISMATCH'}")
print("projected bytes and memory match the run" if ok else "PROJECTION MISMATCH")
sys.exit(0 if ok else 1)
