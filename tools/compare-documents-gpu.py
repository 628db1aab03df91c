#!/usr/bin/env python3
"""Packed documents beside the same length without them, per kernel family: one table.

  tools/compare-documents-gpu.py LABEL=RESULTS.h5 [LABEL=RESULTS.h5...]

RESULTS.h5 is `minictx run inputs/gpu-documents.yaml` (the label names its kernel
family): per sequence length, a point without documents and points with them. For each
point with documents, the attention's TFLOPS over the pairs it counts (within a
document; causal-exact where the mask is causal) and its ratio to the same length
without documents; a ratio of at least --min (0.8) holds the acceptance, documents
costing at most a fifth of the rate. Exits 1 when a ratio falls short or a run lacks
either point. Needs h5py.
"""
import argparse
import sys

from system_python import require

require("h5py")
import h5py  # noqa: E402  (after require)


def read(path):
    """{(seq_len, documents): TFLOPS} of the points that ran."""
    rows = {}
    with h5py.File(path, "r") as f:
        if f.attrs.get("format") != "minictx-results":
            sys.exit(f"compare-documents-gpu: {path} is not a minictx results file")
        for g in f["points"].values() if "points" in f else []:
            if g.attrs["skipped_reason"]:
                continue
            labels, m = g["labels"].attrs, g["metrics"].attrs
            causal = str(labels.get("causal", "true")).lower() in ("true", "1")
            tflops = m["tflops_per_device_causal"] if causal else m["tflops_per_device"]
            rows[(int(labels["seq_len"]), str(labels.get("documents", "none")))] = float(tflops)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="LABEL=RESULTS.h5")
    parser.add_argument("--min", type=float, default=0.8, help="the least ratio that holds (0.8)")
    args = parser.parse_args()
    if any("=" not in r for r in args.runs):
        parser.error("each run is LABEL=RESULTS.h5")
    ok = True
    print("| run | S | documents | TFLOPS | TFLOPS without | ratio | holds |")
    print("|---|---:|---|---:|---:|---:|---|")
    for label, path in (r.split("=", 1) for r in args.runs):
        rows = read(path)
        with_documents = [(s, d) for s, d in sorted(rows) if d != "none"]
        if not with_documents:
            print(f"| {label} | - | - | - | - | - | no point with documents ran |")
            ok = False
        for s, d in with_documents:
            shown = d if len(d) <= 24 else f"{d.count(',') + 1} documents"
            base = rows.get((s, "none"))
            if base is None:
                print(f"| {label} | {s} | {shown} | {rows[(s, d)]:.1f} | - | - | no point without documents ran |")
                ok = False
                continue
            ratio = rows[(s, d)] / base
            ok &= ratio >= args.min
            print(f"| {label} | {s} | {shown} | {rows[(s, d)]:.1f} | {base:.1f} | {ratio:.3f} "
                  f"| {'yes' if ratio >= args.min else 'no'} |")
    sys.exit(0 if ok else 1)


main()
