#!/usr/bin/env python3
"""Tampered submissions: each edit applied with h5py to copies of the honest runs of
make_submission_runs.py, then assessed by `minictx report --submission` and by
tools/check-submission.py. The two must agree (status, exit code, every run's status and
FOM, every verdict), and each edit must be seen where it was made: the field it touched is
named by both, or the submission is non-compliant for the reason it was made. An edit is
tried as it is (the digests then no longer match) and "resealed" (the digests made again
over the edited values, as anyone can), where the recomputation alone must see it.

The last cases are the limits, stated rather than hidden: a forger who rewrites the times
and every figure consistently and reseals passes both tools (only re-running proves a
figure: docs/benchmark.md, "A centre's spot-check"); a file that is not results is bad
input (exit 2).

  check_submission_tampered.py MINICTX RUNS_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from submission_support import both, checker

minictx, runs = sys.argv[1:3]
POINT = "points/point_0000"
tmp = tempfile.mkdtemp()
cases = 0


def copy(name, as_name=None):
    path = os.path.join(tmp, f"{cases}-{as_name or name}.h5")
    shutil.copy(os.path.join(runs, name + ".h5"), path)
    return path


def honest(name):
    return os.path.join(runs, name + ".h5")


def reseal(path):
    """The digests made again over the file as it is now."""
    with h5py.File(path, "r+") as f:
        prov = checker.provenance_digest(f)
        for name in f["points"]:
            g = f["points"][name]
            g.attrs["provenance_digest"] = prov
            g.attrs["digest"] = checker.point_digest(g, prov)


def edited(name, edit, sealed):
    path = copy(name)
    with h5py.File(path, "r+") as f:
        edit(f)
    if sealed:
        reseal(path)
    return path


def fields_of(doc, where):
    for r in doc["runs"] + doc["verifications"]:
        if r["run"] == where:
            return {f["field"] for f in r["inconsistent"]}
    raise AssertionError(f"{where} is not assessed: {json.dumps(doc)[:2000]}")


def case(what, files, code, named=None):
    """Both tools on `files`: exit `code`, and for each (file, fields) in `named` each field
    named against that file's point by both."""
    global cases
    cases += 1
    got, doc, binary, independent = both(minictx, files, what)
    assert got == code, f"{what}: exit {got}, expected {code}: {binary['why']}\n{doc}"
    for path, fields in (named or {}).items():
        where = f"{path}:point_0000"
        for tool, assessment in (("report", binary), ("checker", independent)):
            missing = set(fields) - fields_of(assessment, where)
            assert not missing, f"{what}: {tool} does not name {missing} ({fields_of(assessment, where)})"
    print(f"ok: {what}: exit {got}" + (f", named {sorted(set().union(*named.values()))}" if named else ""))
    return binary, independent


def both_ways(what, name, edit, code, fields, others, digest="digest"):
    """The edit as it is (the digest names it: `digest` for the point's, `provenance_digest`
    for the provenance's) and resealed (the recomputation does)."""
    for sealed in (False, True):
        path = edited(name, edit, sealed)
        case(f"{what}{', resealed' if sealed else ''}", [path] + others, code,
             {path: set(fields) if sealed else set(fields) | {digest}})


def set_metric(key, value):
    return lambda f: f[f"{POINT}/metrics"].attrs.__setitem__(key, value)


def replace_in_deck(old, new):
    def edit(f):
        g = f[POINT]
        assert old in g.attrs["deck"], old
        g.attrs["deck"] = g.attrs["deck"].replace(old, new)
    return edit


def fail_every_tensor(f):
    v = f[f"{POINT}/verification"]
    v["max_rel_err"][...] = 1.0
    v["max_abs_err"][...] = 1.0
    v["pass"][...] = 0  # the verdict attribute is left VALID


def raise_tolerance(f):
    v = f[f"{POINT}/verification"]
    v["tolerance"][...] = 1.0
    v["max_rel_err"][...] = 0.5


def keep_rows(n):
    def edit(f):
        v = f[f"{POINT}/verification"]
        for name in list(v):
            data = v[name][:n]
            dtype = h5py.string_dtype() if h5py.check_string_dtype(v[name].dtype) else v[name].dtype
            del v[name]
            v.create_dataset(name, data=data, dtype=dtype)
    return edit


def fake_gpu(f):
    f["provenance"].attrs["gpu_name"] = "NVIDIA H100 80GB HBM3"


def invalidate(f):
    """An INVALID verification as a build with a wrong kernel would write it."""
    v = f[f"{POINT}/verification"]
    v["max_rel_err"][3] = 1.0
    v["pass"][3] = 0
    f[POINT].attrs["verdict"] = "INVALID"


def forge_times(factor):
    """Every time scaled and every figure recomputed from the scaled times: a consistent forgery."""
    def edit(f):
        f[f"{POINT}/iter_seconds"][...] = f[f"{POINT}/iter_seconds"][()] * factor
    return edit


def rederive_metrics(path):
    _, points, _ = checker.read_file(path)
    p = points[0]
    metrics = checker.recomputed_metrics(p, checker.parse_deck(p.deck))
    with h5py.File(path, "r+") as f:
        for key, value in metrics.items():
            f[f"{POINT}/metrics"].attrs[key] = value


def unproject(f):
    del f[f"{POINT}/labels"].attrs["projected"]
    f[POINT].attrs["verdict"] = "UNVERIFIED"
    del f["provenance"].attrs["projected"]


launches = [honest("m2"), honest("m3"), honest("v")]
submission = [honest("m1")] + launches
case("honest", submission, 0)

# The cases.
both_ways("FOM set to 9999", "m1", set_metric("tokens_per_s_per_device", 9999.0), 6,
          {"metrics/tokens_per_s_per_device"}, launches)
both_ways("a 1,024-token run's deck edited to say 2,048", "short", replace_in_deck("length: 1024", "length: 2048"),
          6, {"deck", "labels/seq_len", "metrics/tokens_per_s_per_device"}, launches)
both_ways("every tensor failing, the verdict left VALID", "v", fail_every_tensor, 6, {"verdict"},
          [honest("m1"), honest("m2"), honest("m3")])
for sealed in (False, True):
    m, v = edited("m1", fake_gpu, sealed), edited("v", fake_gpu, sealed)
    field = "provenance/gpu_name" if sealed else "provenance_digest"
    case(f"a fake GPU in both files{', resealed' if sealed else ''}", [m, v, honest("m2"), honest("m3")], 6,
         {m: {field}, v: {field}})
binary, _ = case("a single-device verification", [honest("m1"), honest("m2"), honest("m3"), honest("vsingle")], 4)
assert all("single-device" in r["verification"] for r in binary["runs"]), binary["runs"]
relabelled = edited("vsingle", lambda f: (replace_in_deck("reference: single-device", "reference: fp64")(f),
                                          f[POINT].attrs.__setitem__("reference", "fp64")), True)
case("a single-device verification relabelled fp64, resealed",
     [honest("m1"), honest("m2"), honest("m3"), relabelled], 6, {relabelled: {"deck"}})

# Edits nobody listed.
both_ways("a tolerance raised to 1.0", "v", raise_tolerance, 6, {"verification/tolerance"},
          [honest("m1"), honest("m2"), honest("m3")])
both_ways("the failing rows removed", "v", keep_rows(3), 6, {"verification/tensor"},
          [honest("m1"), honest("m2"), honest("m3")])
# A negative time makes the point unreadable (the format's rule): left out, the file inconsistent.
for sealed in (False, True):
    path = edited("m1", lambda f: f[f"{POINT}/iter_seconds"].__setitem__((0, 0), -1.0), sealed)
    binary, independent = case(f"a negative time{', resealed' if sealed else ''}", [path] + launches, 6)
    for tool, assessment in (("report", binary), ("checker", independent)):
        assert any(l["run"] == path and "iter_seconds" in l["why"] for l in assessment["left_out"]), (
            f"a negative time: {tool} left out {assessment['left_out']}")
both_ways("the world size label", "m1", lambda f: f[f"{POINT}/labels"].attrs.__setitem__("world_size", "8"), 6,
          {"labels/world_size"}, launches)
both_ways("the provenance's world size", "m1", lambda f: f["provenance"].attrs.__setitem__("world_size", 8.0), 6,
          {"provenance/world_size"}, launches, "provenance_digest")
both_ways("a measurement claiming a VALID verdict", "m1",
          lambda f: (f[POINT].attrs.__setitem__("verdict", "VALID"), f[POINT].attrs.__setitem__("reference", "fp64")),
          6, {"verdict", "verification"}, launches)
both_ways("another class in the deck", "m1", replace_in_deck("class: tiny-twin", "class: small-twin"), 6, {"deck"},
          launches)
both_ways("a step's MFU", "m1", set_metric("mfu", 0.5), 6, {"metrics/mfu"}, launches)
no_digest = edited("m1", lambda f: f[POINT].attrs.__delitem__("digest"), False)
case("the digest removed", [no_digest] + launches, 6, {no_digest: {"digest"}})
binary, independent = case("a launch given twice", [honest("m1"), copy("m1", "m1-again"), honest("m2"), honest("v")], 6)
assert binary["classes"][0]["copies"] and independent["classes"][0]["copies"], binary["classes"]
case("two launches", [honest("m1"), honest("m2"), honest("v")], 5)
broken = edited("m1", lambda f: f[POINT].__delitem__("iter_seconds"), False)
binary, _ = case("a dataset deleted", [broken] + launches, 6)
assert any(broken in why for why in binary["why"]), binary["why"]
garbled = edited("m1", lambda f: f[POINT].attrs.__setitem__("deck", "model: [unclosed"), True)
case("a deck that does not parse", [garbled] + launches, 6)
unresolved = edited("m1", lambda f: f[POINT].attrs.__setitem__("deck", "benchmark:\n  class: tiny-twin\nmodel:\n  layers: many\n"),
                    True)
case("a deck that is not a resolved deck", [unresolved] + launches, 6, {unresolved: {"deck"}})
unprojected = edited("proj", unproject, True)
case("a projected point passed off as a run", [unprojected] + submission, 6, {unprojected: {"iters"}})

# Not tampering: a projected file beside the runs, and one VALID and one INVALID
# verification of the same configuration, in both orders (an INVALID one decides).
case("a projected file", [honest("proj")] + submission, 0)
invalid = edited("v", invalidate, True)
first, _ = case("VALID and INVALID verifications", submission + [invalid], 5)
again, _ = case("INVALID and VALID verifications", [invalid] + submission[::-1], 5)
assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True), "the order of the files mattered"
assert all(r["verification"].startswith("INVALID") for r in first["runs"]), first["runs"]

# The limits. A consistent forgery passes (a spread above the bound is flagged by both).
forged = edited("m1", forge_times(0.25), False)
rederive_metrics(forged)
reseal(forged)
binary, independent = case("a consistent forgery (the limit of a digest)", [forged] + launches, 0)
assert binary["classes"][0]["spread_flagged"] and independent["classes"][0]["spread_flagged"], binary["classes"]
junk = os.path.join(tmp, "junk.h5")
with open(junk, "w") as f:
    f.write("not HDF5\n")
r = subprocess.run([minictx, "report", "--submission", junk, honest("m1")], capture_output=True, text=True)
assert r.returncode == 2 and r.stderr.startswith("minictx: error:"), (r.returncode, r.stderr)
try:
    checker.check([junk, honest("m1")], os.path.join(os.path.dirname(checker.__file__), "..", "inputs", "benchmark",
                                                       "resolved"))
    raise AssertionError("the checker took a file that is not results")
except ValueError:
    pass
shutil.rmtree(tmp)
print(f"tampered submissions ok: {cases} cases")
