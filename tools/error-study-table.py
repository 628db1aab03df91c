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
from journal_points import journal_points  # noqa: E402

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
        names = set(f["points"]) if "points" in f else set()
        journal_id = f.attrs.get("journal_id")
        for g in f["points"].values() if "points" in f else []:
            v = g["verification"]
            if not g.attrs["skipped_reason"] and v["tensor"].shape[0]:
                found.append((dict(g["labels"].attrs), list(v["tensor"].asstr()[:]), list(v["rms_rel_err"][:]),
                              g.attrs["verdict"]))
    # A killed run's journal holds the points recorded after the file was last written whole.
    for p in (p for p in journal_points(path, journal_id) if p["name"] not in names):
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
    """One row of panels a (mode, layers): the output's and the gradients' error against
    fp64 of the 16-bit series (fp32's, 10⁻⁷, named in the title: on one axis it would
    flatten them), and both over the one-device run's."""
    system_python.require("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    groups = OrderedDict()  # (mode, layers) -> {series: [(world, cells)]}
    fp32 = defaultdict(list)  # (mode, layers) -> fp32 errors, for the titles
    for (backend, ring_type, mode, layers, dtype, partials), world, _, cells in rows:
        key = (mode, layers if mode == "model" else "")
        if dtype == "fp32":
            fp32[key] += [cells[m][0] for m, _ in MEASURES]
            continue
        name = f"{dtype}, partials {partials}" + ("" if (backend, ring_type) == ("ring", "zigzag")
                                                  else f" ({backend} {ring_type})")
        groups.setdefault(key, OrderedDict()).setdefault(name, []).append((world, cells))
    names = list(OrderedDict.fromkeys(n for g in groups.values() for n in g))
    colours = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    markers = "osD^v<>ph*X"
    fig, axes = plt.subplots(len(groups), 3, figsize=(15, 3.8 * len(groups)), squeeze=False)
    for panel_row, ((mode, layers), series) in zip(axes, groups.items()):
        what = f"model, {layers} layer{'s' if layers != '1' else ''}" if mode == "model" else "attention alone"
        worlds = sorted({w for pts in series.values() for w, _ in pts})
        for name, points in series.items():
            n = names.index(name)
            shift = 2 ** ((n - (len(names) - 1) / 2) * 0.04)  # set apart: equal values stay visible
            points.sort(key=lambda p: p[0])
            xs = [w * shift for w, _ in points]
            style = dict(marker=markers[n % len(markers)], color=colours(n), capsize=3, linewidth=1.2,
                         markersize=5, alpha=0.9)
            for ax, (m, _) in zip(panel_row[:2], MEASURES):
                means = [c[m][0] for _, c in points]
                errs = [[c[m][0] - c[m][1] for _, c in points], [c[m][2] - c[m][0] for _, c in points]]
                ax.errorbar(xs, means, yerr=errs, label=name, **style)
            for m, line in zip(("output", "gradients"), ("-", "--")):
                ratios = [(x, c[m][3]) for x, (_, c) in zip(xs, points) if c[m][3] is not None]
                if ratios:
                    panel_row[2].plot([x for x, _ in ratios], [r for _, r in ratios], linestyle=line,
                                      marker=markers[n % len(markers)], color=colours(n), markersize=5)
        fp32_text = f"; fp32: {max(fp32[(mode, layers)]):.1e} at most" if fp32[(mode, layers)] else ""
        titles = [f"{what}: output against fp64{fp32_text}", f"{what}: gradients against fp64",
                  f"{what}: over the one-device run (— output, -- gradients)"]
        for i, (ax, title) in enumerate(zip(panel_row, titles)):
            ax.set_xscale("log", base=2)
            # The 16-bit errors lie within a factor of a few: a linear axis keeps their ticks;
            # the ratios span decades where one series' baseline is fp32.
            if i == 2:
                ax.set_yscale("log")
            else:
                ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
            ax.set_xticks(worlds)
            ax.set_xticklabels([str(w) for w in worlds])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("world size (ranks)")
            ax.grid(alpha=0.3, which="both")
        panel_row[0].set_ylabel("RMS relative error (bars: seeds' min–max)", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.tight_layout(rect=(0, 0.035 * ((len(labels) + 3) // 4) + 0.02, 1, 1))
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
