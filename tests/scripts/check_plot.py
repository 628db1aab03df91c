#!/usr/bin/env python3
"""outputs/plot.py draws every kind of figure: USP-style lines from a real 2-rank sweep,
BurstAttention-style bars from a results file of the four variants in two settings
(written here with h5py, as the burst backend is not in every build), and the ring timeline
of one of the sweep's points (recorded with run.ring_timeline) and of a double ring of two
windows, each drawn from its `minictx report --trace` file, whose outer-ring lane must show
both its colours (blocks, gradient sums). Each PNG
must have the expected size and real content (many non-white pixels, several colours).
A finished sweep is all in its file; a killed run's points in the file's journal (one
written here in minictx's record format) are read by `minictx report` and drawn, and a
record cut short is not.

  check_plot.py MINICTX MPIEXEC SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import zlib

import h5py
import matplotlib.colors
import matplotlib.image
import numpy

minictx, mpiexec, source = sys.argv[1], sys.argv[2], sys.argv[3]
plot = [sys.executable, os.path.join(source, "outputs", "plot.py")]
sys.path.insert(0, os.path.join(source, "outputs"))
import journal_points as records  # noqa: E402  (the reader of a results file's journal)


def check_png(path, points):
    assert os.path.getsize(path) > 20000, os.path.getsize(path)
    pixels = matplotlib.image.imread(path)[:, :, :3]
    assert pixels.shape[0] > 400 and pixels.shape[1] > 1000, pixels.shape
    inked = (pixels.sum(axis=2) < 2.9).mean()
    assert inked > 0.02, f"almost blank: {inked:.3f} of the pixels inked"
    colours = {tuple(p) for p in (pixels.reshape(-1, 3) * 8).astype(int)}
    assert len(colours) >= points, len(colours)


def record(out, ranks, *sets):
    """A minictx run of one timed iteration per point, with the ring timeline, into `out`."""
    args = [mpiexec, "-n", str(ranks), minictx, "run", "--set", "run.iters=1", "--set", "run.ring_timeline=true"]
    for s in sets:
        args += ["--set", s]
    run = subprocess.run(args + ["-o", out], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def trace_of(results, point, out):
    """The point's trace, as `minictx report --trace` writes it: what --kind timeline draws."""
    if os.path.exists(out):
        os.remove(out)
    run = subprocess.run([minictx, "report", results, "--trace", point, "-o", out], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def as_json(group):
    """An HDF5 group as JSON holds it: attributes and datasets by name, NaN as "NaN"."""
    def value(x):
        x = x.decode() if isinstance(x, bytes) else x.item() if hasattr(x, "item") else x
        return "NaN" if x != x else x
    out = {k: value(v) for k, v in group.attrs.items()}
    for k, v in group.items():
        out[k] = as_json(v) if isinstance(v, h5py.Group) else [value(x) for x in v[()].reshape(-1)]
    return out


def has_colour(path, name, alpha):
    """Whether some pixel is matplotlib colour `name` drawn with `alpha` on white."""
    want = numpy.array(matplotlib.colors.to_rgb(name)) * alpha + (1 - alpha)
    pixels = matplotlib.image.imread(path)[:, :, :3].reshape(-1, 3)
    return bool((numpy.abs(pixels - want).max(axis=1) < 2 / 255).any())


def write_burst_file(path):
    """Two settings x four variants, in the results file layout (outputs/README.md)."""
    with h5py.File(path, "w") as f:
        f.attrs["format"], f.attrs["format_version"] = "minictx-results", 1
        f.create_group("provenance")
        i = 0
        for model, seq, world in [("llama-7b", "2097152", "32"), ("llama-13b", "1048576", "32")]:
            for variant in ("(A) full, ring", "(B) full, ulysses", "(C) selective, ring", "(D) selective, ulysses"):
                g = f.create_group(f"points/point_{i:04d}")
                g.attrs["index"], g.attrs["skipped_reason"] = i, ""
                labels = {"backend": "burst", "variant": variant, "model": model, "seq_len": seq, "world_size": world}
                g.create_group("labels").attrs.update(labels)
                mfu = 0.3 + 0.02 * i
                g.create_group("metrics").attrs.update({"mfu": 2 * mfu, "mfu_causal": mfu, "tokens_per_s": 5000 * mfu})
                i += 1


with tempfile.TemporaryDirectory() as tmp:
    sweep = os.path.join(tmp, "sweep.h5")
    record(sweep, 2, "run.mode=attention", "attention.backend=ring", "attention.ring_type=[basic,zigzag]",
           "sequence.length=[256,512]")
    lines = os.path.join(tmp, "lines.png")
    out = subprocess.run(plot + [sweep, "-o", lines], capture_output=True, text=True)
    assert out.returncode == 0 and "lines of 4 points" in out.stdout, out.stdout + out.stderr
    check_png(lines, 4)

    burst = os.path.join(tmp, "burst.h5")
    write_burst_file(burst)
    bars = os.path.join(tmp, "bars.png")
    out = subprocess.run(plot + [burst, sweep, "-o", bars], capture_output=True, text=True)
    assert out.returncode == 0 and "bars of 12 points" in out.stdout, out.stdout + out.stderr
    check_png(bars, 4)

    timeline = os.path.join(tmp, "timeline.png")
    trace = os.path.join(tmp, "trace.json")
    out = subprocess.run(plot + [trace_of(sweep, "point_0001", trace), "-o", timeline, "--kind", "timeline"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "timeline of point_0001 layer 0" in out.stdout, out.stdout + out.stderr
    check_png(timeline, 4)
    # Attention mode has layer 0 only: another layer is one error line, not an empty figure.
    out = subprocess.run(plot + [trace, "-o", timeline, "--kind", "timeline", "--layer", "1"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "no ring steps of layer 1" in out.stderr, out.stdout + out.stderr
    # A results file is not a trace: the error says how to make one.
    out = subprocess.run(plot + [sweep, "-o", timeline, "--kind", "timeline"], capture_output=True, text=True)
    assert out.returncode != 0 and "--trace POINT" in out.stderr, out.stdout + out.stderr

    # Two windows of one rank: every block and gradient sum crosses the outer ring.
    double = os.path.join(tmp, "double.h5")
    record(double, 2, "run.mode=attention", "attention.backend=double_ring", "attention.window_size=1",
           "sequence.length=256")
    out = subprocess.run(plot + [trace_of(double, "point_0000", trace), "-o", timeline, "--kind", "timeline"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "timeline of point_0000 layer 0" in out.stdout, out.stdout + out.stderr
    check_png(timeline, 4)
    for colour in ("tab:purple", "tab:olive"):
        assert has_colour(timeline, colour, 0.8), f"no outer-ring bar in {colour}"
    # The plain ring's timeline has no outer lane.
    out = subprocess.run(plot + [trace_of(sweep, "point_0000", trace), "-o", timeline, "--kind", "timeline"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and not has_colour(timeline, "tab:purple", 0.8), out.stdout + out.stderr

    # A finished sweep (skipped points after the last that ran) is all in the file, no journal.
    killed = os.path.join(tmp, "killed.h5")
    record(killed, 1, "run.mode=attention", "attention.backend=usp", "attention.ulysses_degree=[1,8,8]",
           "sequence.length=[256,512,1024]", "sweep.zip=[attention.ulysses_degree,sequence.length]")
    assert not os.path.exists(killed + ".journal")
    with h5py.File(killed, "r") as f:
        assert sorted(f["points"]) == ["point_0000", "point_0001", "point_0002"], list(f["points"])
        assert f["points/point_0002"].attrs["skipped_reason"]
        journal_id = f.attrs["journal_id"]
    # As a killed run leaves it: a point that ran, in the journal only (the double ring's,
    # under the next name), recorded as minictx records it (outputs/README.md, "The journal").
    with h5py.File(double, "r") as f:
        ran = dict(as_json(f["points/point_0000"]), name="point_0003", index=3)
    rest = json.dumps({"journal_id": journal_id, "point": ran}, separators=(",", ":"))[1:] + "\n"
    with open(killed + ".journal", "w") as f:
        f.write('{"crc32":"%08x",' % zlib.crc32(rest.encode()) + rest)
    assert [p["name"] for p in records.journal_points(killed, journal_id)] == ["point_0003"]
    report = subprocess.run([minictx, "report", killed, "--format", "csv"], capture_output=True, text=True)
    assert report.returncode == 0 and len(report.stdout.strip().splitlines()) == 5, report.stdout + report.stderr
    out = subprocess.run(plot + [killed, "-o", lines], capture_output=True, text=True)
    assert out.returncode == 0 and "lines of 2 points" in out.stdout, out.stdout + out.stderr
    out = subprocess.run(plot + [trace_of(killed, "point_0003", trace), "-o", timeline, "--kind", "timeline"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "timeline of point_0003 layer 0" in out.stdout, out.stdout + out.stderr
    assert has_colour(timeline, "tab:purple", 0.8), "no outer-ring bar of the journal's point"
    # A record cut short (a job killed while writing it) is not read; the rest is.
    os.truncate(killed + ".journal", os.path.getsize(killed + ".journal") - 5)
    assert records.journal_points(killed, journal_id) == []
    report = subprocess.run([minictx, "report", killed, "--format", "csv"], capture_output=True, text=True)
    assert report.returncode == 0 and len(report.stdout.strip().splitlines()) == 4, report.stdout + report.stderr

    bad = subprocess.run(plot + [os.path.join(tmp, "missing.h5"), "-o", bars], capture_output=True, text=True)
    assert bad.returncode != 0
print("plot ok")
