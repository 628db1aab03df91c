#!/usr/bin/env python3
"""minictx's layer step beside eager PyTorch's, measured in the same job: one table.

  tools/compare-layer-gpu.py LABEL=RESULTS.h5 [LABEL=RESULTS.h5...] TORCH_CSV

RESULTS.h5 is `minictx run inputs/gpu-layer.yaml` (one point per sequence length; the
label names its kernel family, say); TORCH_CSV the output of tools/bench-torch-layer-gpu.py
(seq_len,ms,tflops_mpt,mfu_mpt,peak_mem_gb; lines that are not rows are skipped). Both
count FLOPs by minictx's MPT convention and memory in units of 2^20 bytes (PyTorch's GiB
times 1024), so the columns compare directly. Prints per length and run: step time, MFU
and peak memory, and their ratios to PyTorch's (time and memory: lower is better); then
where minictx's step goes, from each point's phase_seconds (the slowest rank's, per
timed step): the phases nest (attention_fwd and gemm_fwd inside forward and recompute;
attention_bwd, gemm_bwd and recompute inside backward), so the layer's other work,
outside attention and the GEMMs (its element-wise and row kernels, conversions, launch
gaps), is forward - attention_fwd - gemm_fwd and backward - attention_bwd - gemm_bwd -
grad_allreduce, given where no recompute ran and the model has no LM head (whose
backward GEMMs run in the forward). Needs h5py.
"""
import csv
import sys

from system_python import require

require("h5py")
import h5py  # noqa: E402  (after require)


PHASES = ("forward", "attention_fwd", "gemm_fwd", "backward", "attention_bwd", "gemm_bwd", "recompute",
          "grad_allreduce")


def read_minictx(path):
    """{seq_len: (ms, mfu, peak MiB, {phase: ms per step})} of the points that ran."""
    rows = {}
    with h5py.File(path, "r") as f:
        if f.attrs.get("format") != "minictx-results":
            sys.exit(f"compare-layer-gpu: {path} is not a minictx results file")
        for g in f["points"].values() if "points" in f else []:
            if g.attrs["skipped_reason"]:
                continue
            m = g["metrics"].attrs
            iters = max(int(g.attrs.get("iters", 1)), 1)
            stored = g["phase_seconds"] if "phase_seconds" in g else {}
            phases = {p: 1e3 * max(stored[p][()]) / iters for p in PHASES if p in stored}
            rows[int(g["labels"].attrs["seq_len"])] = (float(m["latency_ms"]), float(m["mfu"]),
                                                       float(m["peak_memory_mb"]), phases)
    return rows


def print_phases(runs):
    """Per length and run, milliseconds per step in each phase and outside attention and GEMMs."""
    print()
    print("| S | run | step (ms) | forward | attention fwd | GEMMs fwd | other fwd | backward | attention bwd "
          "| GEMMs bwd | other bwd | recompute | grad_allreduce |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sorted({s for _, rows in runs for s in rows}):
        for label, rows in runs:
            if s not in rows:
                continue
            ms, ph = rows[s][0], rows[s][3]
            cell = {p: f"{ph[p]:.2f}" if p in ph else "-" for p in PHASES}
            plain = all(p in ph for p in PHASES) and ph["recompute"] == 0
            other_fwd = f"{ph['forward'] - ph['attention_fwd'] - ph['gemm_fwd']:.2f}" if plain else "-"
            other_bwd = (f"{ph['backward'] - ph['attention_bwd'] - ph['gemm_bwd'] - ph['grad_allreduce']:.2f}"
                         if plain else "-")
            print(f"| {s} | {label} | {ms:.2f} | {cell['forward']} | {cell['attention_fwd']} | {cell['gemm_fwd']} "
                  f"| {other_fwd} | {cell['backward']} | {cell['attention_bwd']} | {cell['gemm_bwd']} | {other_bwd} "
                  f"| {cell['recompute']} | {cell['grad_allreduce']} |")


def read_torch(path):
    """{seq_len: (ms, mfu, peak MiB)} from the CSV rows."""
    rows = {}
    with open(path) as f:
        for r in csv.reader(f):
            if len(r) == 5 and r[0].isdigit():
                rows[int(r[0])] = (float(r[1]), float(r[3]), float(r[4]) * 1024)
    return rows


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[1:-1]):
        sys.exit(__doc__)
    runs = [(a.split("=", 1)[0], read_minictx(a.split("=", 1)[1])) for a in sys.argv[1:-1]]
    torch = read_torch(sys.argv[-1])
    print("| S | run | step (ms) | MFU | peak (MiB) | PyTorch step (ms) | PyTorch MFU | PyTorch peak (MiB) "
          "| step / PyTorch | peak / PyTorch |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sorted({s for _, rows in runs for s in rows} | set(torch)):
        t = torch.get(s)
        for label, rows in runs:
            r = rows.get(s)
            if r is None:
                continue
            ours = f"{r[0]:.2f} | {100 * r[1]:.1f} % | {r[2]:.0f}"
            theirs = f"{t[0]:.2f} | {100 * t[1]:.1f} % | {t[2]:.0f} | {r[0] / t[0]:.3f} | {r[2] / t[2]:.3f}" \
                if t else "- | - | - | - | -"
            print(f"| {s} | {label} | {ours} | {theirs} |")
    print_phases(runs)


main()
