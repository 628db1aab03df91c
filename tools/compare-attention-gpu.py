#!/usr/bin/env python3
"""minictx's attention kernels beside PyTorch SDPA's, measured in the same job: one table.

  tools/compare-attention-gpu.py MINICTX_LOG SDPA_CSV [--format md|csv]
  tools/compare-attention-gpu.py LABEL=MINICTX_LOG [LABEL=MINICTX_LOG...] SDPA_CSV [--format md|csv]

MINICTX_LOG is the output of `minictx bench --device cuda` (its markdown table S | mask |
D | pass | time (ms) | TFLOPS | of GEMM, and its calibration line); SDPA_CSV the output
of tools/bench-torch-sdpa-gpu.py (one row per backend and shape; lines starting with '#'
are its notes; lines before its header and others that are not rows are skipped). Both count FLOPs by the convention of docs/user-guide.md, "Metrics", so the TFLOPS compare
directly. Prints per shape and pass: minictx's TFLOPS and fraction of its GEMM
calibration, every SDPA backend's TFLOPS, and minictx / FA2 (SDPA's flash backend) and
minictx / cuDNN. A shape one side did not measure shows '-'. Several labelled logs (one
per kernel family, say, each run with its --kernels) give one table with each
one's TFLOPS and ratios, the calibrations in the note below it. Standard library only.
"""
import argparse
import csv
import re
import sys

HEADER = ["S", "mask", "D", "pass"]
CALIBRATION = re.compile(r"^calibration: (\S+) GEMM (\d+)\^3 .*?: ([0-9.]+) TFLOPS at the start")
# The ratio columns, "<run> / <title>": (title, SDPA backend).
RATIOS = [("FA2", "flash"), ("cuDNN", "cudnn")]


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
    # From the header on: a warning PyTorch printed into the same stream may come first.
    header = next((i for i, line in enumerate(data) if line.startswith("seq_len,")), len(data))
    data = data[header:]
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


def table(runs, sdpa, backends):
    """The header and the rows for runs = [(label, {shape: (tflops, of_gemm)})]: the first
    run's shapes in its order, then those only a later run or SDPA measured. One run keeps
    its fraction of the GEMM beside its TFLOPS; several show their TFLOPS side by side."""
    single = len(runs) == 1
    header = list(HEADER)
    for label, _ in runs:
        header += [f"{label} TFLOPS"] + (["of GEMM"] if single else [])
    header += [f"SDPA {b}" for b in backends]
    header += [f"{label} / {title}" for label, _ in runs for title, _ in RATIOS]
    keys = []
    for shapes in [rows for _, rows in runs] + [sdpa]:
        keys += [k for k in shapes if k not in keys]
    out = []
    for key in keys:
        theirs = sdpa.get(key, {})
        row = [str(key[0]), key[1], str(key[2]), key[3]]
        for _, rows in runs:
            ours, of_gemm = rows.get(key, (None, None))
            row += [fmt(ours)] + ([fmt(of_gemm, 3)] if single else [])
        row += [fmt(theirs.get(b)) for b in backends]
        for _, rows in runs:
            ours = rows.get(key, (None, None))[0]
            row += [fmt(ours / theirs[b], 3) if ours is not None and theirs.get(b) else "-" for _, b in RATIOS]
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


def labelled(specs):
    """[(label, path)] from MINICTX_LOG arguments: one may go unlabelled ('minictx'),
    several need distinct labels."""
    runs = [tuple(s.split("=", 1)) if "=" in s else ("minictx", s) for s in specs]
    labels = [label for label, _ in runs]
    if len(runs) > 1 and ("minictx" in labels or len(set(labels)) != len(labels)):
        raise ValueError("several minictx logs need distinct labels (LABEL=PATH)")
    return runs


def gemm_note(calibration):
    return (f"{calibration[0]} GEMM {calibration[1]}^3 at {calibration[2]:.1f} TFLOPS" if calibration
            else "no calibration line")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("minictx_logs", nargs="+", metavar="[LABEL=]MINICTX_LOG")
    p.add_argument("sdpa_csv")
    p.add_argument("--format", choices=["md", "csv"], default="md")
    a = p.parse_args(argv)
    try:
        specs = labelled(a.minictx_logs)
    except ValueError as e:
        print(f"compare-attention-gpu: {e}", file=sys.stderr)
        return 2
    runs, calibrations = [], []
    for label, path in specs:
        with open(path, errors="replace") as f:
            rows, calibration = read_minictx(f.read().splitlines())
        runs.append((label, rows))
        calibrations.append((label, calibration))
    with open(a.sdpa_csv, errors="replace") as f:
        sdpa, backends = read_sdpa(f.read().splitlines())
    if not any(rows for _, rows in runs) and not sdpa:
        print(f"compare-attention-gpu: no rows in {' '.join(path for _, path in specs)} or {a.sdpa_csv}",
              file=sys.stderr)
        return 1
    header, rows = table(runs, sdpa, backends)
    sys.stdout.write(render(header, rows, a.format))
    if a.format == "md":
        convention = "TFLOPS by the convention of docs/user-guide.md, \"Metrics\" (forward 4·B·S²·H·D, halved when causal; fwd+bwd 3.5×)"
        if len(runs) == 1:
            print(f"\n{convention}; 'of GEMM': minictx's fraction of its {gemm_note(calibrations[0][1])}, "
                  "measured in the same run.")
        else:
            gemms = "; ".join(f"{label}: {gemm_note(c)}" for label, c in calibrations)
            print(f"\n{convention}. Each run's calibration at its start: {gemms}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
