#!/usr/bin/env python3
"""minictx's attention kernels beside PyTorch SDPA's, measured in the same job: one table.

  ci/compare-attention-gpu.py MINICTX_LOG SDPA_CSV [--format md|csv]

MINICTX_LOG is the output of `minictx bench --device cuda` (its markdown table S | mask |
D | pass | time (ms) | TFLOPS | of GEMM, and its calibration line); SDPA_CSV the output
of ci/bench_torch_sdpa_gpu.py (one row per backend and shape; lines starting with '#'
are its notes; other lines that are not rows are skipped). Both count FLOPs by the README's convention, so the TFLOPS compare
directly. Prints per shape and pass: minictx's TFLOPS and fraction of its GEMM
calibration, every SDPA backend's TFLOPS, and minictx / FA2 (SDPA's flash backend) and
minictx / cuDNN. A shape one side did not measure shows '-'. Standard library only.
"""
import argparse
import csv
import re
import sys

HEADER = ["S", "mask", "D", "pass"]
CALIBRATION = re.compile(r"^calibration: (\S+) GEMM (\d+)\^3 .*?: ([0-9.]+) TFLOPS at the start")
# The ratio columns: (title, SDPA backend).
RATIOS = [("minictx / FA2", "flash"), ("minictx / cuDNN", "cudnn")]


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_minictx(lines):
    """{(S, mask, D, pass): (tflops, of_gemm)} in table order, and the calibration line's
    (dtype, side, TFLOPS) or None."""
    rows, calibration, columns = {}, None, None
    for line in lines:
        m = CALIBRATION.match(line)
        if m:
            calibration = (m.group(1), int(m.group(2)), float(m.group(3)))
        if not line.startswith("|"):
            columns = None
            continue
        c = cells(line)
        if c[:4] == HEADER:
            columns = c
        elif columns and not set(line) <= set("|-: \n"):
            r = dict(zip(columns, c))
            key = (int(r["S"]), r["mask"], int(r["D"]), r["pass"])
            rows[key] = (float(r["TFLOPS"]), float(r["of GEMM"]))
    return rows, calibration


def read_sdpa(lines):
    """{(S, mask, D, pass): {backend: tflops}} and the backends in order of appearance."""
    rows, backends = {}, []
    data = [line for line in lines if line.strip() and not line.startswith("#")]
    for r in csv.DictReader(data):
        try:
            mask = "causal" if r["causal"] in ("True", "true", "1") else "full"
            key = (int(r["seq_len"]), mask, int(r["head_dim"]), r["pass"])
            rows.setdefault(key, {})[r["backend"]] = float(r["tflops"])
        except (KeyError, TypeError, ValueError):
            continue  # not a row: a warning PyTorch printed into the same stream
        if r["backend"] not in backends:
            backends.append(r["backend"])
    return rows, backends


def table(minictx, sdpa, backends):
    """The header and the rows: minictx's shapes in its order, then any SDPA alone measured."""
    header = HEADER + ["minictx TFLOPS", "of GEMM"] + [f"SDPA {b}" for b in backends] + [t for t, _ in RATIOS]
    keys = list(minictx) + [k for k in sdpa if k not in minictx]
    out = []
    for key in keys:
        ours, of_gemm = minictx.get(key, (None, None))
        theirs = sdpa.get(key, {})
        row = [str(key[0]), key[1], str(key[2]), key[3], fmt(ours), fmt(of_gemm, 3)]
        row += [fmt(theirs.get(b)) for b in backends]
        for _, b in RATIOS:
            row.append(fmt(ours / theirs[b], 3) if ours is not None and theirs.get(b) else "-")
        out.append(row)
    return header, out


def fmt(x, decimals=1):
    return "-" if x is None else f"{x:.{decimals}f}"


def render(header, rows, form):
    if form == "csv":
        return "\n".join(",".join(r) for r in [header] + rows) + "\n"
    align = ["---" if i < len(HEADER) else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("minictx_log")
    p.add_argument("sdpa_csv")
    p.add_argument("--format", choices=["md", "csv"], default="md")
    a = p.parse_args(argv)
    with open(a.minictx_log, errors="replace") as f:
        minictx, calibration = read_minictx(f.read().splitlines())
    with open(a.sdpa_csv, errors="replace") as f:
        sdpa, backends = read_sdpa(f.read().splitlines())
    if not minictx and not sdpa:
        print(f"compare-attention-gpu: no rows in {a.minictx_log} or {a.sdpa_csv}", file=sys.stderr)
        return 1
    header, rows = table(minictx, sdpa, backends)
    sys.stdout.write(render(header, rows, a.format))
    if a.format == "md":
        gemm = (f"{calibration[0]} GEMM {calibration[1]}^3 at {calibration[2]:.1f} TFLOPS" if calibration
                else "no calibration line")
        print(f"\nTFLOPS by the README's convention (forward 4·B·S²·H·D, halved when causal; fwd+bwd 3.5×); "
              f"'of GEMM': minictx's fraction of its {gemm}, measured in the same run.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
