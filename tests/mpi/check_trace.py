#!/usr/bin/env python3
"""`minictx report FILE.h5 --trace POINT -o TRACE.json` on the results file of
kokkos_tools_regions (a 4-rank zigzag ring, two timed iterations, run.ring_timeline). The
trace must validate against the Chrome trace event format as a JSON Schema (complete events
"X" with a non-negative duration, metadata events "M"; begin/end events, were there any,
matched per track) and nest on every track as a trace viewer stacks it; every rank must be
a process with its phases on one track and its ring transfers on a comm track of its own;
per rank and phase the durations must add up to the file's phase_seconds, and the ring steps
and transfers be the file's. A second write to the same name, an unknown point and a point
without a timeline and a damaged scope are one-line errors with exit status 2.

  check_trace.py MINICTX RESULTS.h5"""
import json
import math
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

import h5py
import jsonschema

minictx, results = sys.argv[1], sys.argv[2]

NUMBER = {"type": "number"}
SCHEMA = {
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "traceEvents": {"type": "array", "items": {"oneOf": [
            {"type": "object", "required": ["name", "ph", "pid", "tid", "ts", "dur"],
             "properties": {"ph": {"const": "X"}, "name": {"type": "string"}, "cat": {"type": "string"},
                            "pid": {"type": "integer"}, "tid": {"type": "integer"},
                            "ts": NUMBER, "dur": {"type": "number", "minimum": 0}, "args": {"type": "object"}}},
            {"type": "object", "required": ["name", "ph", "pid", "tid", "ts"],
             "properties": {"ph": {"enum": ["B", "E"]}, "pid": {"type": "integer"}, "tid": {"type": "integer"},
                            "ts": NUMBER}},
            {"type": "object", "required": ["name", "ph", "pid", "args"],
             "properties": {"ph": {"const": "M"},
                            "name": {"enum": ["process_name", "process_sort_index", "thread_name",
                                              "thread_sort_index"]},
                            "pid": {"type": "integer"}, "tid": {"type": "integer"}, "args": {"type": "object"}}},
        ]}},
    },
}
ROUNDING = 1e-9  # seconds: the microsecond doubles of the JSON text against the file's seconds


def trace(point, out):
    return subprocess.run([minictx, "report", results, "--trace", point, "-o", out], capture_output=True, text=True)


def check_nesting(events):
    """Begin/end pairs matched and complete events nested (or disjoint) per track."""
    tracks = defaultdict(list)
    for e in events:
        if e["ph"] in "XBE":
            tracks[(e["pid"], e["tid"])].append(e)
    for track, evs in tracks.items():
        open_be = []
        for e in sorted((e for e in evs if e["ph"] in "BE"), key=lambda e: e["ts"]):
            if e["ph"] == "B":
                open_be.append(e["name"])
            else:
                assert open_be, f"track {track}: an end without a begin"
                open_be.pop()
        assert not open_be, f"track {track}: {open_be} begun and never ended"
        stack = []
        for e in sorted((e for e in evs if e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"])):
            start, end = e["ts"], e["ts"] + e["dur"]
            while stack and stack[-1][1] <= start + 1e-3:
                stack.pop()
            assert not stack or end <= stack[-1][1] + 1e-3, \
                f"track {track}: {e['name']} [{start}, {end}] overlaps {stack[-1]}"
            stack.append((e["name"], end))


def edited_copy(path, edit):
    """The results file copied to `path`, its point_0000 changed by edit(point group)."""
    with h5py.File(results, "r") as src, h5py.File(path, "w") as dst:
        for k, v in src.attrs.items():
            dst.attrs[k] = v
        src.copy("provenance", dst)
        src.copy("points", dst)
        edit(dst["points/point_0000"])
    return path


def without_timeline(p):
    """As a run without run.ring_timeline writes the group: iteration -1, every column empty."""
    t = p["ring_timeline"]
    del t["phases"]
    t.attrs["iteration"] = -1
    for group in (t, t["outer"]):
        for k in [k for k in group if isinstance(group[k], h5py.Dataset)]:
            dtype = group[k].dtype
            del group[k]
            group.create_dataset(k, shape=(0,), dtype=dtype)


def ending_before_start(p):
    p["ring_timeline/phases/end"][0] = -1.0


def refused(path, out, why):
    """`report --trace` of `path` exits 2 with one line naming `why` and writes nothing."""
    done = subprocess.run([minictx, "report", path, "--trace", "point_0000", "-o", out], capture_output=True,
                          text=True)
    assert done.returncode == 2 and why in done.stderr and done.stderr.count("\n") == 1, done.stdout + done.stderr
    assert not os.path.exists(out)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "trace.json")
        done = trace("point_0000", out)
        assert done.returncode == 0 and not done.stderr, done.stdout + done.stderr
        with open(out) as f:
            doc = json.load(f)
        jsonschema.validate(doc, SCHEMA)
        events = doc["traceEvents"]
        check_nesting(events)

        with h5py.File(results, "r") as f:
            p = f["points/point_0000"]
            ranks = int(p.attrs["ranks"])
            seconds = {k: p["phase_seconds"][k][:] for k in p["phase_seconds"]}
            t = p["ring_timeline"]
            steps = len(t["rank"])
            transfers = int((t["transfer_posted"][:] == t["transfer_posted"][:]).sum())
        names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e["ph"] == "M"
                 and e["name"] in ("process_name", "thread_name")}
        for r in range(ranks):
            assert names.get((r, None)) == f"rank {r}", names
            assert any(v.startswith("comm") for (pid, tid), v in names.items() if pid == r and tid is not None), \
                f"rank {r} has no comm track"
        total = defaultdict(float)
        for e in events:
            if e.get("cat") == "phase":
                total[(e["pid"], e["name"])] += e["dur"] * 1e-6
        for phase, per_rank in seconds.items():
            for r in range(ranks):
                got, want = total.get((r, phase), 0.0), float(per_rank[r])
                assert math.isclose(got, want, rel_tol=1e-9, abs_tol=ROUNDING), (phase, r, got, want)
        count = defaultdict(int)
        for e in events:
            count[e.get("cat")] += 1
        assert count["ring_step"] == steps and count["transfer"] == transfers, (dict(count), steps, transfers)
        assert {e["pid"] for e in events if e["ph"] == "X"} == set(range(ranks))

        again = trace("point_0000", out)
        assert again.returncode == 2 and again.stderr.count("\n") == 1 and "exists" in again.stderr, again.stderr
        missing = trace("point_0042", os.path.join(tmp, "missing.json"))
        assert missing.returncode == 2 and "has no point point_0042" in missing.stderr, missing.stderr
        assert not os.path.exists(os.path.join(tmp, "missing.json"))
        untimed = edited_copy(os.path.join(tmp, "untimed.h5"), without_timeline)
        refused(untimed, os.path.join(tmp, "none.json"), "recorded no timeline")
        # A damaged scope (ending before it starts) is refused, never written as a negative duration.
        damaged = edited_copy(os.path.join(tmp, "damaged.h5"), ending_before_start)
        refused(damaged, os.path.join(tmp, "bad.json"), "the timeline is damaged")
    print(f"{len(events)} events over {ranks} ranks: valid, nested, phase totals equal phase_seconds")
    print("trace ok")


main()
