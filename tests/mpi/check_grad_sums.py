#!/usr/bin/env python3
"""The layer stack's weight-gradient sums and fp16's loss scale at 4 ranks (ring, zigzag,
two emulated nodes), one `run` sweep with `run.verify` on:

- bf16 and fp16, each with `run.grad_reduce_dtype` fp32 and storage: every point VALID;
  each rank's bytes differ between the two by exactly what the all-reduce formula gives
  for 2 more bytes per parameter, 2(P - 1)/P x n_params x 2, and by nothing else; every
  weight gradient is nearer the single-device run, and nearer fp64, with fp32 sums than
  with 16-bit ones.
- fp16 from a dynamic scale of 2^28: the first steps overflow, the scale halves until the
  gradients are finite, the point is VALID, and its metrics say how many steps ran again
  (overflow_steps) and where the scale ended (loss_scale = 2^28 / 2^overflow_steps); the
  gradient check is a phase of its own.
- fp16 at a fixed scale of 2^28: refused in one line, kept as a skipped point with that
  line as its reason (`minictx report`), and the sweep goes on.

Further arguments are `--set` options given to the run (ci/gpu-check.sh gradsums: `--set
run.device=cuda`, through the staged mpi comm).

  check_grad_sums.py MPIEXEC MINICTX [--set KEY=VALUE ...]"""
import math
import subprocess
import sys
import tempfile

import h5py

from sweep_cases import sweep_args

mpiexec, minictx, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
ranks = 4
big = str(2 ** 28)
keys = ("run.dtype", "run.grad_reduce_dtype", "run.loss_scale", "run.initial_loss_scale")
cases = [dict(zip(keys, values)) for values in (
    ("bf16", "fp32", "dynamic", "65536"), ("bf16", "storage", "dynamic", "65536"),
    ("fp16", "fp32", "dynamic", "65536"), ("fp16", "storage", "dynamic", "65536"),
    ("fp16", "fp32", "dynamic", big), ("fp16", "fp32", big, "65536"))]
common = ["--set", "run.mode=model", "--set", "model.preset=tiny", "--set", "model.layers=2",
          "--set", "sequence.length=201", "--set", "sequence.batch=2", "--set", "attention.backend=ring",
          "--set", "attention.ring_type=zigzag", "--set", "topology.ranks_per_node=2",
          "--set", "machine.profile=generic-cpu", "--set", "machine.peak_tflops=1", "--set", "run.verify=true",
          "--set", "run.warmup=0", "--set", "run.iters=1"]


def weight_grad_errors(point, column):
    """{weight gradient: its rms relative error in `column`}."""
    v = point["verification"]
    return {n: e for n, e in zip(v["tensor"].asstr()[:], v[column][:]) if n.startswith("grads/layer")}


ok = True


def check(condition, what):
    global ok
    ok &= bool(condition)
    print(("ok   " if condition else "FAIL ") + what)


with tempfile.TemporaryDirectory() as tmp:
    out = subprocess.run([mpiexec, "-n", str(ranks), minictx, "run", "-o", f"{tmp}/g.h5"] + common + extra + sweep_args(cases),
                         capture_output=True, text=True)
    print(out.stdout[-3000:], out.stderr[-2000:])
    check(out.returncode == 0, f"the sweep exits 0 (got {out.returncode})")
    with h5py.File(f"{tmp}/g.h5", "r") as f:
        points = [f["points"][n] for n in sorted(f["points"].keys())]
        for p, case in zip(points[:5], cases):
            check(p.attrs["verdict"] == "VALID", f"{case}: {p.attrs['verdict']}")
        sent = [p["bytes_sent_intra"][:] + p["bytes_sent_inter"][:] for p in points[:4]]
        for dtype, fp32, storage in (("bf16", 0, 1), ("fp16", 2, 3)):
            n_params = points[fp32]["metrics"].attrs["n_params"]
            want = 2 * (ranks - 1) / ranks * n_params * (4 - 2)
            got = sent[fp32] - sent[storage]
            check(all(g == want for g in got),
                  f"{dtype}: fp32 sums send {list(got)} bytes per rank more than storage ones, formula {want}")
            for side in ("intra", "inter"):
                a, b = points[fp32][f"bytes_sent_{side}"][:], points[storage][f"bytes_sent_{side}"][:]
                check(all(x >= y for x, y in zip(a, b)), f"{dtype}: no {side}-node byte fewer with fp32 sums")
            for column, against in (("single_rms_rel_err", "one device"), ("rms_rel_err", "fp64")):
                nearer, farther = (weight_grad_errors(points[i], column) for i in (fp32, storage))
                worse = [n for n in nearer if not nearer[n] < farther[n]]
                ratios = sorted(nearer[n] / farther[n] for n in nearer)
                check(len(nearer) == 18 and not worse,
                      f"{dtype}: every weight gradient nearer {against} with fp32 sums (error ratio to 16-bit "
                      f"sums {ratios[0]:.2f} to {ratios[-1]:.2f}){' but ' + ', '.join(worse) if worse else ''}")
        for p in points[:4]:
            m = p["metrics"].attrs
            check(m["overflow_steps"] == 0, f"{p.name}: no overflow at the default scale")
        dynamic = points[4]
        m = dynamic["metrics"].attrs
        steps, scale = m["overflow_steps"], m["loss_scale"]
        check(steps > 0 and scale == 2.0 ** 28 / 2.0 ** steps,
              f"fp16 from 2^28: {steps:.0f} steps ran again, the scale ended at {scale:.0f}")
        check(min(dynamic["phase_seconds"]["grad_check"][:]) > 0, "fp16: the gradient check is timed")
        check(max(points[0]["phase_seconds"]["grad_check"][:]) == 0, "bf16, unscaled: no gradient check")
        check(math.isfinite(m["loss"]), "the loss of the rescaled step is finite")
    refusal = ("skipped: the weight gradients overflow fp16 (Inf or NaN) at the fixed run.loss_scale 268435456: "
               "set run.loss_scale to dynamic, or to a smaller power of two")
    check(refusal + "\n" in out.stdout, "fp16 at a fixed 2^28: refused in one line, and the sweep went on")
    report = subprocess.run([minictx, "report", f"{tmp}/g.h5"], capture_output=True, text=True).stdout
    rows = [line for line in report.splitlines() if line.startswith("| point_")]
    check(len(rows) == len(cases) and rows[-1].startswith("| point_0005 ") and refusal in rows[-1],
          "the file holds every point, the refused one as skipped with its line")
print("gradient sums ok" if ok else "GRADIENT SUMS FAILED")
sys.exit(0 if ok else 1)
