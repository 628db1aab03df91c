#!/usr/bin/python3
"""Figures from minictx results files (schema: outputs/README.md).

  outputs/plot.py FILE.h5... -o FIGURE.png [--kind lines|bars]
  outputs/plot.py TRACE.json -o FIGURE.png --kind timeline [--layer L]
  outputs/plot.py FILE.h5... -o FIGURE.png --kind errors

lines (USP style): TFLOPS per device and peak memory per device against seq_len, one colour
  per backend / ring type / Ulysses x ring degrees, dashed forward only, solid fwd+bwd.
bars (BurstAttention style): MFU and tokens/s, one group of bars per setting (model,
  seq_len, world size), one bar per variant (A)-(D) as in `minictx report --columns burst`.
timeline: one step's ring walks as a Gantt chart, drawn from the events of a point's trace
  (`minictx report FILE.h5 --trace POINT -o TRACE.json`, of a point run with
  run.ring_timeline=true: the events Perfetto shows): one panel per pass of the layer (forward,
  recompute, backward), one lane per rank with its compute bars (labelled with the source
  rank) and the exposed wait after each in red, above its inner-ring transfer bars and, on a
  two-level ring, thin bars of its outer-ring transfers (blocks, gradient sums). Default:
  layer 0.
errors: verify's errors against world size (points run with run.verify=true), as
  `minictx report --columns errors`: the worst RMS relative error of the outputs (top) and
  of the gradients (bottom), against fp64 (left) and, for 16-bit runs, against the
  single-device run of the dtype (right; one rank's zero is not drawn on the log axis);
  one line per backend, dtype, partials and layer count.
The default kind is bars when a file holds burst points, else lines. Points of several
files are merged; skipped points are left out. Needs h5py and matplotlib (Debian:
python3-h5py python3-matplotlib); a killed run's points in the file's journal are drawn
too. Draws with the Agg backend, no display needed.
"""
import argparse
import json
import os
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from system_python import require  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from journal_points import journal_points  # noqa: E402

require("h5py", "numpy", "matplotlib")
import h5py  # noqa: E402  (after require)
import matplotlib  # noqa: E402
import numpy  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.patches import Patch  # noqa: E402


def read_points(paths):
    """Every point that ran, in run order per file: (labels, metrics) dicts."""
    points = []
    for path in paths:
        with h5py.File(path, "r") as f:
            if f.attrs.get("format") != "minictx-results":
                sys.exit(f"plot.py: {path} is not a minictx results file")
            groups = sorted(f["points"].values(), key=lambda g: g.attrs["index"]) if "points" in f else []
            for g in groups:
                if g.attrs["skipped_reason"]:
                    continue
                points.append((dict(g["labels"].attrs), {k: float(v) for k, v in g["metrics"].attrs.items()}))
        # A killed run's journal holds the points after those in the file, in run order.
        points += [(p["labels"], {k: float(v) for k, v in p["metrics"].items()})
                   for p in only_in_journal(path) if not p["skipped_reason"]]
    return points


def only_in_journal(path):
    """The points of PATH's journal that are not in the file (a killed run's last points)."""
    with h5py.File(path, "r") as f:
        names = set(f["points"]) if "points" in f else set()
        journal_id = f.attrs.get("journal_id")
    return [p for p in journal_points(path, journal_id) if p["name"] not in names]


def projected(labels):
    """' (projected)' for a point of `minictx project`, so it stands beside its measurement."""
    return " (projected)" if labels.get("projected") == "true" else ""


def point_variant(labels):
    """As point_variant() in miniapp/report/report.cpp (the `variant` label the backend
    gives, else backend and ring layout), marked when projected."""
    backend, ring = labels.get("backend", "n/a"), labels.get("ring_type")
    name = labels.get("variant") or (backend if ring is None else f"{backend} ({ring})")
    return name + projected(labels)


def tokens_label(seq_len):
    n = int(seq_len)
    return f"{n // 1024}k" if n % 1024 == 0 and n >= 1024 else str(n)


def draw_bars(points, out):
    settings = OrderedDict()
    for labels, metrics in points:
        key = (labels.get("model", "n/a"), labels.get("seq_len", "n/a"), labels.get("world_size", "n/a"))
        # Repeated measurements of one variant in one setting: the last one is drawn.
        settings.setdefault(key, {})[point_variant(labels)] = metrics
    variants = sorted({v for by_variant in settings.values() for v in by_variant})
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    width = 0.8 / max(len(variants), 1)
    names = [f"{m} {tokens_label(s)}\non {w} ranks" for m, s, w in settings]
    for ax, (metric, scale, title) in zip(axes, [("mfu_causal", 100.0, "MFU (%), causal FLOPs"), ("tokens_per_s_per_device", 1.0, "Tokens/s per device")]):
        for i, variant in enumerate(variants):
            xs, ys = [], []
            for x, by_variant in enumerate(settings.values()):
                m = by_variant.get(variant, {})
                if metric in m:
                    xs.append(x + (i - (len(variants) - 1) / 2) * width)
                    ys.append(m[metric] * scale)
            ax.bar(xs, ys, width, label=variant)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    # One legend under both panels, clear of the bars.
    handles, names = axes[0].get_legend_handles_labels()
    rows = (len(variants) + 1) // 2
    fig.legend(handles, names, loc="lower center", ncol=2, fontsize=8)
    fig.tight_layout(rect=(0, 0.045 * rows + 0.01, 1, 1))
    fig.savefig(out, dpi=110)


def series_name(labels):
    """(line group, pass): a colour per backend / ring type / degrees, a line style per pass."""
    name = labels.get("backend", "n/a")
    if labels.get("ring_type"):
        name += " " + labels["ring_type"]
    if labels.get("backend") in ("usp", "double_ring", "burst"):
        name += f" u{labels.get('ulysses_degree', '?')}r{labels.get('ring_degree', '?')}"
    return name + projected(labels), "fwd" if labels.get("fwd_only") == "true" else "fwd+bwd"


def draw_lines(points, out):
    series = OrderedDict()
    for labels, metrics in points:
        series.setdefault(series_name(labels), []).append((int(labels.get("seq_len", 0)), metrics))
    groups = list(OrderedDict.fromkeys(group for group, _ in series))
    colours = plt.get_cmap("tab10" if len(groups) <= 10 else "tab20")
    seq_lens = sorted({s for rows in series.values() for s, _ in rows})
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, (metric, title) in zip(axes, [("tflops_per_device", "TFLOPS per device"),
                                          ("peak_memory_mb", "peak memory (MB per device)")]):
        for (group, passes), rows in series.items():
            rows = sorted((s, m[metric]) for s, m in rows if metric in m)
            if rows:
                ax.plot([s for s, _ in rows], [v for _, v in rows], marker="o",
                        linestyle="--" if passes == "fwd" else "-", color=colours(groups.index(group)),
                        label=f"{group} {passes}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(seq_lens)
        ax.set_xticklabels([tokens_label(s) for s in seq_lens])
        ax.minorticks_off()
        ax.set_xlabel("seq_len (tokens)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def read_errors(paths):
    """Per verified point: its labels and the worst RMS relative error of its outputs and
    gradients, against the reference and against one device (None where not measured)."""
    def worst(tensors, columns):
        found = {}
        for column in ("rms_rel_err", "single_rms_rel_err"):
            values = columns.get(column, [numpy.nan] * len(tensors))
            for prefix in ("outputs/", "grads/"):
                picked = [float(x) for t, x in zip(tensors, values) if t.startswith(prefix)]
                found[column, prefix] = max(picked) if picked and not numpy.isnan(picked).all() else None
        return found

    points = []
    for path in paths:
        with h5py.File(path, "r") as f:
            if f.attrs.get("format") != "minictx-results":
                sys.exit(f"plot.py: {path} is not a minictx results file")
            for g in f["points"].values() if "points" in f else []:
                v = g["verification"]
                if not g.attrs["skipped_reason"] and v["tensor"].shape[0]:
                    points.append((dict(g["labels"].attrs), worst(list(v["tensor"].asstr()[:]),
                                                                  {c: v[c][:] for c in v})))
        for p in only_in_journal(path):
            v = p["verification"]
            if not p["skipped_reason"] and v["tensor"]:
                points.append((p["labels"], worst(v["tensor"], v)))
    return points


def layer_text(layers):
    """A series' layer count as a legend says it ("attention only" for attention mode)."""
    return layers if not layers.isdigit() else f"{layers} layer{'s' if layers != '1' else ''}"


def draw_errors(points, out):
    series = OrderedDict()
    for labels, worst in points:
        name = (f"{labels.get('backend', 'n/a')} {labels.get('ring_type', '')}, {labels.get('dtype', '?')}, "
                f"partials {labels.get('partials', 'fp32')}")
        # Attention-mode points have no layers: their series is the attention alone.
        series.setdefault((name, labels.get("layers", "attention only")), []).append(
            (int(labels["world_size"]), worst))
    names = list(OrderedDict.fromkeys(name for name, _ in series))
    layer_counts = sorted({layers for _, layers in series}, key=lambda x: int(x) if x.isdigit() else 0)
    styles = ["-", "--", ":", "-."]
    colours = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    worlds = sorted({w for rows in series.values() for w, _ in rows})
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), sharex=True)
    panels = [("rms_rel_err", "outputs/", "outputs against fp64"),
              ("single_rms_rel_err", "outputs/", "outputs against one device (16-bit runs)"),
              ("rms_rel_err", "grads/", "gradients against fp64"),
              ("single_rms_rel_err", "grads/", "gradients against one device (16-bit runs)")]
    for ax, (column, prefix, title) in zip(axes.flat, panels):
        for (name, layers), rows in series.items():
            # A log axis has no zero: one rank's run against one device is left out.
            rows = sorted((w, e[column, prefix]) for w, e in rows if e[column, prefix])
            if rows:
                ax.plot([w for w, _ in rows], [x for _, x in rows], marker="o", color=colours(names.index(name)),
                        linestyle=styles[layer_counts.index(layers) % len(styles)],
                        label=f"{name}, {layer_text(layers)}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(worlds)
        ax.set_xticklabels([str(w) for w in worlds])
        ax.minorticks_off()
        ax.set_title(title + ": worst RMS relative error", fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("world size (ranks)")
    handles, labels = axes[1][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7)
    rows = (len(labels) + 2) // 3
    fig.tight_layout(rect=(0, 0.03 * rows + 0.02, 1, 1))
    fig.savefig(out, dpi=110)


# Outer-ring transfers by what they carry (the trace's event names): colour, lane (bottom,
# height) relative to the rank's compute, legend. Blocks and sums are in flight together,
# hence two lanes.
OUTER_BARS = {"ring_outer_block": ("tab:purple", (-0.31, 0.1), "outer ring: block to the next window"),
              "ring_outer_sums": ("tab:olive", (-0.43, 0.1), "outer ring: gradient sums")}
WAIT_COLOUR = "tab:red"


def read_trace(path):
    """(otherData, events) of a trace written by `minictx report FILE.h5 --trace POINT -o TRACE.json`."""
    if path.endswith(".h5"):
        sys.exit(f"plot.py: --kind timeline draws a trace: write one with "
                 f"`minictx report {path} --trace POINT -o TRACE.json` (a point run with run.ring_timeline=true)")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"plot.py: {path}: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        sys.exit(f"plot.py: {path} is not a trace of `minictx report --trace`")
    return doc.get("otherData", {}), doc["traceEvents"]


def draw_timeline(path, layer, out):
    info, events = read_trace(path)
    walk = [e for e in events if e.get("ph") == "X" and e.get("args", {}).get("layer") == layer
            and e.get("cat") in ("ring_step", "wait", "transfer")]
    passes = [p for p in ("forward", "recompute", "backward") if any(e["args"]["pass"] == p for e in walk)]
    if not passes:
        layers = sorted({e["args"]["layer"] for e in events if e.get("cat") == "ring_step"})
        sys.exit(f"plot.py: {path} has no ring steps of layer {layer} (layers {layers})")
    ranks = sorted({e["pid"] for e in walk})
    steps = max(e["args"]["step"] for e in walk if e["cat"] == "ring_step") + 1
    # Step colours without the reds, which mark the waits.
    palette = ([plt.get_cmap("tab10")(i) for i in range(10) if i != 3] if steps <= 9 else
               [plt.get_cmap("tab20")(i) for i in range(20) if i not in (6, 7)])
    zero = info.get("recorded_iteration_start_us", 0.0)  # times from the recorded iteration's start
    # A two-level ring makes room for its outer transfers under the inner ones.
    two_level = any(e["name"] in OUTER_BARS for e in walk)
    inner_bar = (-0.18, 0.13) if two_level else (-0.4, 0.35)
    height = 0.4 + len(passes) * (1.0 + (0.7 if two_level else 0.5) * len(ranks))
    fig, axes = plt.subplots(len(passes), 1, figsize=(11, height), squeeze=False)
    for ax, pass_name in zip(axes[:, 0], passes):
        mine = [e for e in walk if e["args"]["pass"] == pass_name]
        for e in mine:
            y = len(ranks) - 1 - ranks.index(e["pid"])
            t0, dt = (e["ts"] - zero) / 1e3, e["dur"] / 1e3
            if e["cat"] == "ring_step":
                ax.broken_barh([(t0, dt)], (y + 0.05, 0.5), color=palette[e["args"]["step"] % len(palette)])
                ax.text(t0 + dt / 2, y + 0.3, str(e["args"]["source"]), ha="center", va="center", fontsize=7)
            elif e["cat"] == "wait":
                ax.broken_barh([(t0, dt)], (y + 0.05, 0.5), color=WAIT_COLOUR, alpha=0.85)
            elif e["name"] in OUTER_BARS:
                colour, (bottom, tall), _ = OUTER_BARS[e["name"]]
                ax.broken_barh([(t0, dt)], (y + bottom, tall), color=colour, alpha=0.8, edgecolor="white",
                               linewidth=0.5)
            else:
                ax.broken_barh([(t0, dt)], (y + inner_bar[0], inner_bar[1]), color="tab:gray", alpha=0.6,
                               edgecolor="white", linewidth=0.5)
        ax.set_yticks(range(len(ranks)))
        ax.set_yticklabels([f"rank {r}" for r in reversed(ranks)])
        handles = [Patch(color=WAIT_COLOUR, alpha=0.85, label="exposed wait for the ring transfer")]
        if any(e["name"] == "ring_transfer" for e in mine):  # windows of one move nothing
            handles.append(Patch(color="tab:gray", alpha=0.6, label="inner-ring transfer"))
        handles += [Patch(color=c, alpha=0.8, label=text) for name, (c, _, text) in OUTER_BARS.items()
                    if any(e["name"] == name for e in mine)]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
        ax.set_title(f"{pass_name}: compute per ring step (source rank on the bar), exposed wait after it in red, "
                     f"transfers below", fontsize=9)
        ax.set_xlabel("ms since the start of the recorded iteration (each rank's own clock)")
        ax.grid(axis="x", alpha=0.3)
    ring = info.get("ring_type")
    fig.suptitle(f"{info.get('point', '?')}: {info.get('backend', 'n/a')}{' ' + ring if ring else ''}, "
                 f"{info.get('world_size', '?')} ranks, seq_len {info.get('seq_len', '?')}, layer {layer}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return info.get("point", "?")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="minictx results files (.h5)")
    parser.add_argument("-o", "--output", required=True, help="figure file (.png, .pdf, .svg)")
    parser.add_argument("--kind", choices=["lines", "bars", "timeline", "errors"],
                        help="default: bars if there are burst points, else lines")
    parser.add_argument("--layer", type=int, default=0, help="timeline: the layer (default 0)")
    args = parser.parse_args()
    if args.kind == "timeline":
        if len(args.files) != 1:
            sys.exit("plot.py: --kind timeline draws one trace")
        name = draw_timeline(args.files[0], args.layer, args.output)
        print(f"plot.py: timeline of {name} layer {args.layer} -> {args.output}")
        return
    if args.kind == "errors":
        points = read_errors(args.files)
        if not points:
            sys.exit("plot.py: no verified point in " + ", ".join(args.files) + " (run with run.verify=true)")
        draw_errors(points, args.output)
        print(f"plot.py: errors of {len(points)} points -> {args.output}")
        return
    points = read_points(args.files)
    if not points:
        sys.exit("plot.py: no point that ran in " + ", ".join(args.files))
    kind = args.kind or ("bars" if any(lb.get("backend") == "burst" for lb, _ in points) else "lines")
    (draw_bars if kind == "bars" else draw_lines)(points, args.output)
    print(f"plot.py: {kind} of {len(points)} points -> {args.output}")


if __name__ == "__main__":
    main()
