#!/usr/bin/env python3
"""The memory estimate that refuses a run before it allocates must cover what the run
then allocates, and not by so much that it refuses runs that fit: for each backend, the
peak of one attention step, and for each checkpointing policy the peak of one training
step of the model (the FOM line's peak_MB), must lie within [estimate/2, estimate] of
`minictx run --dry-run`'s estimate, on 4 ranks as 2 emulated nodes; both also in bf16,
whose communication buffers, and in the model weights and activations, are 16-bit (the
weight gradients fp32, and 16-bit in one more point with run.grad_reduce_dtype storage);
the model also with an LM head, its logits in chunks (where the device has one), and on
the cuda device with its tuned layer kernels.

The cases of each mode are the points of one sweep: one dry run prints every point's
estimate, one launch runs them all (each point's peak is its own: the run resets it
before the point).

Further arguments are `--set` options given to every run (e.g. `--set run.device=cuda`,
where the estimate also counts what the device holds beside the tensors: cuBLASLt's
workspace and conversion buffers, the attention operands' copies).

  check_memory_estimate.py MPIEXEC MINICTX [--set KEY=VALUE ...]"""
import re
import subprocess
import sys
import tempfile

from sweep_cases import dry_run_estimates, sweep_args

mpiexec, minictx, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
# Each case: the swept keys it sets (sweep_cases.py).
attention = [{"attention.backend": "ring"}, {"attention.backend": "double_ring", "attention.window_size": "2"},
             {"attention.backend": "burst"}, {"attention.backend": "burst", "attention.intra": "ulysses"},
             {"attention.backend": "burst", "attention.bwd_comm": "kv"},
             {"attention.backend": "usp", "attention.ulysses_degree": "2"}, {"attention.backend": "ulysses"},
             {"attention.backend": "allgather"}]
model = [{"run.checkpointing": c} for c in ("none", "full", "selective", "selective_half")]
# The LM head: its weight and gradient, a chunk of logits (automatic, and given); not on
# the cuda device, which has no cross-entropy kernel (the deck check refuses model.vocab).
if "run.device=cuda" not in extra:
    model += [{"run.checkpointing": "none", "model.vocab": "32000"},
              {"run.checkpointing": "none", "model.vocab": "32000", "run.loss_chunk": "512"}]
attention_common = ["--set", "run.mode=attention", "--set", "sequence.length=2048", "--set", "model.kv_heads=8",
                    "--set", "topology.ranks_per_node=2"]
model_common = ["--set", "run.mode=model", "--set", "model.preset=tiny", "--set", "model.layers=4", "--set",
                "sequence.length=2048", "--set", "attention.backend=ring", "--set", "attention.ring_type=stripe"]
sweeps = [
    (attention_common, attention),
    # bf16: the backends' communication buffers are 16-bit, and the estimate counts them so.
    (attention_common + ["--set", "run.dtype=bf16"], attention),
    # Packed documents whose batch rows differ: a device whose kernels mask by position
    # only runs each block one batch row at a time, on copies of its rows.
    (attention_common + ["--set", "run.dtype=bf16", "--set", "sequence.batch=2", "--set",
                         'sequence.documents={"rows":[[1000,1048],[1,2046,1]]}'], attention[:1]),
    (model_common, model),
    (model_common + ["--set", "run.dtype=bf16"],
     model + [{"run.checkpointing": "none", "run.grad_reduce_dtype": "storage"}]),
]
# The cuda device's tuned layer kernels (packed projections, cached positions), opt-in: in
# a launch of their own, after the proven cases.
if "run.device=cuda" in extra:
    sweeps.append((model_common + ["--set", "run.dtype=bf16"], [{"run.layer_kernels": "tuned"}]))
ok = True
with tempfile.TemporaryDirectory() as tmp:
    for common, cases in sweeps:
        args = common + extra + sweep_args(cases)
        dry = subprocess.run([minictx, "run", "--dry-run", "--ranks", "4"] + args, capture_output=True, text=True,
                             check=True).stdout
        estimates = dry_run_estimates(dry)
        done = subprocess.run([mpiexec, "-n", "4", minictx, "run", "-o", f"{tmp}/m.h5", "--force", "--set",
                               "run.iters=1", "--set", "run.warmup=0"] + args, capture_output=True, text=True)
        # A failed run's own words (on a cuda build without a GPU, what ctest skips on).
        assert done.returncode == 0, done.stdout + done.stderr
        run = done.stdout
        peaks = [float(p) for p in re.findall(r"^FOM .* peak_MB=([\d.]+)", run, re.M)]
        assert len(estimates) == len(peaks) == len(cases), (dry, run)
        for case, estimate, peak in zip(cases, estimates, peaks):
            label = " ".join([a.split("=", 1)[1] for a in common if a.startswith(("run.mode", "run.dtype"))] +
                             (["documents by row"] if any(a.startswith("sequence.documents") for a in common) else []) +
                             list(case.values()))
            fits = estimate / 2 <= peak <= estimate
            ok &= fits
            print(f"{label:55s} peak {peak:6.1f} MiB, estimate {estimate:6.0f} MiB {'ok' if fits else 'OUT OF RANGE'}")
print("estimates cover the peaks" if ok else "ESTIMATE OUT OF RANGE")
sys.exit(0 if ok else 1)
