#!/usr/bin/env python3
"""The error study's table and figure from its results files (tools/error-study.sh).

  tools/error-study-table.py [--minictx BIN] [-o FIGURE.png] FILE.h5...

Each FILE's name holds `seed-N` (the repetition) and `world-W`; its points come through
`minictx report --columns errors --format csv`. Points that differ only by their seed are
one configuration: the table gives, per configuration and world size, the worst RMS
relative error of the outputs and of the gradients against fp64 (mean over the seeds,
and their min–max), and its ratio to the one-rank run of the same configuration (mean
over mean; "n/a" without a one-rank run). The figure draws the same against world size,
one panel a (mode, layers, outputs or gradients), a series a (dtype, partials), each
seed's spread as a bar; series that would sit on one another are set apart a little
along the world axis and keep their own marker, so every one is visible. Needs numpy and
matplotlib for the figure.
"""
import argparse
import csv
import io
import math
import os
import re
import subprocess
import sys
from collections import OrderedDict, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import system_python  # noqa: E402

CONFIG = ("backend", "ring_type", "mode", "layers", "dtype", "partials")
MEASURES = (("out rms rel", "outputs"), ("grad rms rel", "gradients"))


def read(minictx, paths):
    """{config: {world: {measure: [value per seed]}}} from every file's report."""
    found = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for path in paths:
        seed = re.search(r"seed-(\d+)", os.path.basename(path))
        if not seed:
            sys.exit(f"error-study-table.py: error: {path} names no seed-N")
        table = subprocess.run([minictx, "report", "--columns", "errors", "--format", "csv", path],
                               capture_output=True, text=True)
        if table.returncode != 0:
            sys.exit(f"error-study-table.py: error: minictx report {path}: {table.stderr.strip()}")
        for row in csv.DictReader(io.StringIO(table.stdout)):
            if row["verdict"] != "VALID":
                print(f"error-study-table.py: {path}: a point is {row['verdict']}", file=sys.stderr)
            config = tuple(row[c] for c in CONFIG)
            for column, _ in MEASURES:
                found[config][int(row["world"])][column].append(float(row[column]))
    return found


def stats(values):
    return sum(values) / len(values), min(values), max(values)


def table_rows(found):
    """(config, world, seeds, {measure: (mean, lo, hi, ratio or None)}) in a stable order."""
    rows = []
    for config in sorted(found, key=lambda c: (c[2], c[3], c[0], c[1], c[4] != "fp32", c[4], c[5])):
        worlds = found[config]
        base = {m: stats(worlds[1][m])[0] for m, _ in MEASURES} if 1 in worlds else {}
        for world in sorted(worlds):
            cells = {}
            for m, _ in MEASURES:
                mean, lo, hi = stats(worlds[world][m])
                cells[m] = (mean, lo, hi, mean / base[m] if base.get(m) else None)
            rows.append((config, world, len(worlds[world][MEASURES[0][0]]), cells))
    return rows


def fmt(x):
    return "n/a" if x is None else f"{x:.3g}"


def print_table(rows):
    print("| backend | mode | layers | dtype | partials | world | seeds | out rms rel vs fp64 (min–max) "
          "| ratio to 1 rank | grad rms rel vs fp64 (min–max) | ratio to 1 rank |")
    print("| :-: | :-: | :-: | :-: | :-: | :-: | :-: | :-: | :-: | :-: | :-: |")
    for (backend, ring_type, mode, layers, dtype, partials), world, seeds, cells in rows:
        name = backend + (f" {ring_type}" if backend in ("ring", "double_ring", "burst", "usp") else "")
        parts = []
        for m, _ in MEASURES:
            mean, lo, hi, ratio = cells[m]
            parts += [f"{fmt(mean)} ({fmt(lo)}–{fmt(hi)})", fmt(ratio)]
        shown_layers = layers if mode == "model" else "n/a"
        print(f"| {name} | {mode} | {shown_layers} | {dtype} | {partials} | {world} | {seeds} | " + " | ".join(parts)
              + " |")


def draw(rows, out):
    system_python.require("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = OrderedDict()  # (mode, layers, measure) -> {series: [(world, mean, lo, hi)]}
    for (backend, ring_type, mode, layers, dtype, partials), world, _, cells in rows:
        for m, title in MEASURES:
            key = (mode, layers if mode == "model" else "", title)
            series = f"{backend} {ring_type}, {dtype}, partials {partials}" if backend != "ring" or ring_type != "zigzag" \
                else f"{dtype}, partials {partials}"
            mean, lo, hi, _ = cells[m]
            panels.setdefault(key, OrderedDict()).setdefault(series, []).append((world, mean, lo, hi))
    names = list(OrderedDict.fromkeys(s for p in panels.values() for s in p))
    colours = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    markers = "osD^v<>ph*X"
    columns = 2
    count = len(panels)
    fig, axes = plt.subplots((count + columns - 1) // columns, columns, figsize=(12, 3.6 * ((count + 1) // 2)),
                             squeeze=False)
    for ax, ((mode, layers, title), series) in zip(axes.flat, panels.items()):
        for i, (name, points) in enumerate(series.items()):
            n = names.index(name)
            # Set apart along the (log) world axis so that equal values stay visible.
            shift = 2 ** ((n - (len(names) - 1) / 2) * 0.03)
            points.sort()
            xs = [w * shift for w, *_ in points]
            means = [p[1] for p in points]
            errs = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
            ax.errorbar(xs, means, yerr=errs, marker=markers[n % len(markers)], color=colours(n), capsize=3,
                        linewidth=1.2, markersize=5, label=name, alpha=0.9)
        worlds = sorted({w for pts in series.values() for w, *_ in pts})
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(worlds)
        ax.set_xticklabels([str(w) for w in worlds])
        ax.minorticks_off()
        what = f"model, {layers} layer{'s' if layers != '1' else ''}" if mode == "model" else "attention alone"
        ax.set_title(f"{what}: {title} against fp64 (worst RMS rel. error; bars: seeds' min–max)", fontsize=9)
        ax.set_xlabel("world size (ranks)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[count:]:
        ax.axis("off")
    handles, labels = list(axes.flat)[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0.04 * ((len(labels) + 2) // 3) + 0.02, 1, 1))
    fig.savefig(out, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--minictx", default="build/miniapp/minictx")
    ap.add_argument("-o", "--output", help="the figure (PNG)")
    args = ap.parse_args()
    rows = table_rows(read(args.minictx, args.files))
    if not rows:
        sys.exit("error-study-table.py: error: no verified point in the files")
    print_table(rows)
    if args.output:
        draw(rows, args.output)
        print(f"\nerror-study-table.py: figure -> {args.output}", file=sys.stderr)
    if any(math.isnan(c[m][0]) for *_, c in rows for m, _ in MEASURES):
        print("error-study-table.py: some errors are NaN", file=sys.stderr)


if __name__ == "__main__":
    main()
