#!/usr/bin/env python3
"""The error study's table and figure from its results files (tools/error-study.sh).

  tools/error-study-table.py [-o FIGURE.png] FILE.h5...

Each FILE's name holds `seed-N` (the repetition); its verified points are read as
outputs/plot.py reads them. Points that differ only by their seed are one configuration:
the table gives, per configuration and world size, the RMS relative error against fp64
of the output (y in model mode, o in attention mode) and the worst of the gradients (mean
over the seeds, and their min–max), and its ratio to the error of the one-device run of
the same problem, which verify runs beside every 16-bit point (its one-device/ rows; the
mean of the seeds' ratios; "n/a" for fp32, where none runs). The loss's own error is in
verify's table. The figure draws the same against world size, one panel a (mode, layers,
output or gradients), a series a (dtype, partials) with its own colour and marker, the
seeds' spread as bars; series are set apart a little along the world axis, so that equal
values stay visible. Needs h5py and numpy, and matplotlib for the figure.
"""
import argparse
import os
import re
import sys
from collections import OrderedDict, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "outputs"))
import system_python  # noqa: E402

system_python.require("h5py", "numpy")
import h5py  # noqa: E402
from appended_points import appended_points  # noqa: E402

CONFIG = ("backend", "ring_type", "mode", "layers", "dtype", "partials")
MEASURES = (("output", "output"), ("gradients", "gradients"))
OUTPUT = {"model": "outputs/y", "attention": "outputs/o"}


def measures(labels, tensors, rms):
    """The point's output error and its worst gradient error against fp64, and each over
    the one-device run's (verify's one-device/ rows; None without them: fp32 runs)."""
    by_name = dict(zip(tensors, (float(x) for x in rms)))

    def pair(pick):
        mine = pick("")
        theirs = pick("one-device/")
        return mine, (mine / theirs if theirs else None)

    output = OUTPUT[labels["mode"]]
    return {"output": pair(lambda prefix: by_name.get(prefix + output)),
            "gradients": pair(lambda prefix: max((x for t, x in by_name.items()
                                                   if t.startswith(prefix + "grads/")), default=None))}


def verified_points(path):
    """(labels, tensor names, rms_rel_err) of every verified point of one results file."""
    found = []
    with h5py.File(path, "r") as f:
        if f.attrs.get("format") != "minictx-results":
            sys.exit(f"error-study-table.py: error: {path} is not a minictx results file")
        for g in f["points"].values() if "points" in f else []:
            v = g["verification"]
            if not g.attrs["skipped_reason"] and v["tensor"].shape[0]:
                found.append((dict(g["labels"].attrs), list(v["tensor"].asstr()[:]), list(v["rms_rel_err"][:]),
                              g.attrs["verdict"]))
    for p in appended_points(path):
        v = p["verification"]
        if not p["skipped_reason"] and v["tensor"]:
            found.append((p["labels"], v["tensor"], v["rms_rel_err"], p.get("verdict", "")))
    return found


def read(paths):
    """{config: {world: {measure: [value per seed]}}} from every file."""
    found = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for path in paths:
        if not re.search(r"seed-(\d+)", os.path.basename(path)):
            sys.exit(f"error-study-table.py: error: {path} names no seed-N")
        for labels, tensors, rms, verdict in verified_points(path):
            if verdict != "VALID":
                print(f"error-study-table.py: {path}: a point is {verdict}", file=sys.stderr)
            config = tuple(labels.get(c, "") for c in CONFIG)
            for m, value in measures(labels, tensors, rms).items():
                found[config][int(labels["world_size"])][m].append(value)  # (error, ratio or None)
    return found


def stats(values):
    return sum(values) / len(values), min(values), max(values)


def mean_ratio(pairs):
    ratios = [r for _, r in pairs if r is not None]
    return sum(ratios) / len(ratios) if len(ratios) == len(pairs) else None


def table_rows(found):
    """(config, world, seeds, {measure: (mean, lo, hi, ratio or None)}) in a stable order."""
    rows = []
    for config in sorted(found, key=lambda c: (c[2], c[3], c[0], c[1], c[4] != "fp32", c[4], c[5])):
        worlds = found[config]
        for world in sorted(worlds):
            cells = {}
            for m, _ in MEASURES:
                mean, lo, hi = stats([e for e, _ in worlds[world][m]])
                cells[m] = (mean, lo, hi, mean_ratio(worlds[world][m]))
            rows.append((config, world, len(worlds[world][MEASURES[0][0]]), cells))
    return rows


def fmt(x):
    return "n/a" if x is None else f"{x:.3g}"


def print_table(rows):
    print("| backend | mode | layers | dtype | partials | world | seeds | output rms rel vs fp64 (min–max) "
          "| over one device | grad rms rel vs fp64 (min–max) | over one device |")
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
    ap.add_argument("-o", "--output", help="the figure (PNG)")
    args = ap.parse_args()
    rows = table_rows(read(args.files))
    if not rows:
        sys.exit("error-study-table.py: error: no verified point in the files")
    print_table(rows)
    if args.output:
        draw(rows, args.output)
        print(f"\nerror-study-table.py: figure -> {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
