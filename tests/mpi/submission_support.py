"""What the submission tests share: `minictx report --submission` and
tools/check-submission.py on the same files, and the check that they agree."""
import importlib.util
import json
import os
import subprocess
import tempfile

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")


def load_checker():
    """tools/check-submission.py as a module (its name has a dash)."""
    spec = importlib.util.spec_from_file_location("check_submission", os.path.join(TOOLS, "check-submission.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


checker = load_checker()


def report(minictx, files, *extra):
    """(exit code, document, JSON assessment) of `report --submission FILES`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "s.json")
        r = subprocess.run([minictx, "report", "--submission", *files, "--json", out, *extra], capture_output=True,
                           text=True)
        assert r.returncode in (0, 4, 5, 6), f"report exit {r.returncode}: {r.stdout}{r.stderr}"
        with open(out) as f:
            return r.returncode, r.stdout, json.load(f)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def agree(binary, independent, what):
    """Both assessments give the same status, the same status and FOM to every class entry
    and run, the same verdict to every verification run."""
    assert binary["status"] == independent["status"] and binary["exit_code"] == independent["exit_code"], (
        f"{what}: report {binary['status']} {binary['why']}, checker {independent['status']} {independent['why']}")
    runs = {r["run"]: r for r in independent["runs"]}
    assert sorted(runs) == sorted(r["run"] for r in binary["runs"]), what
    for r in binary["runs"]:
        o = runs[r["run"]]
        assert r["status"] == o["status"], f"{what}: {r['run']}: report {r['why']}, checker {o['why']}"
        assert close(r["fom"], o["fom"]) or r["fom"] == o["fom"] == 0, f"{what}: {r['run']} FOM {r['fom']} {o['fom']}"
        assert sorted(r["not_allowed"]) == sorted(o["not_allowed"]), f"{what}: {r['run']}"
    classes = [(c["class"], c["configuration"], len(c["launches"]), c["status"]) for c in binary["classes"]]
    assert classes == [(c["class"], c["configuration"], len(c["launches"]), c["status"]) for c in
                       independent["classes"]], f"{what}: {classes} / {independent['classes']}"
    for a, b in zip(binary["classes"], independent["classes"]):
        assert close(a["fom_median"], b["fom_median"]) or a["fom_median"] == b["fom_median"] == 0, what
        assert a["spread_flagged"] == b["spread_flagged"] and len(a["copies"]) == len(b["copies"]), what
    verdicts = [(v["run"], v["verdict"], v["consistent"]) for v in binary["verifications"]]
    assert verdicts == [(v["run"], v["verdict"], v["consistent"]) for v in independent["verifications"]], (
        f"{what}: {verdicts} / {independent['verifications']}")


def both(minictx, files, what, extra=(), classes=None):
    """Both tools on `files` (`extra`: more options of report); asserts they agree and
    returns (exit code, document, the report's JSON, the checker's)."""
    code, doc, binary = report(minictx, files, *extra)
    independent = checker.check(files, classes or os.path.join(TOOLS, "..", "inputs", "benchmark", "resolved"))
    assert code == binary["exit_code"], f"{what}: exit {code}, JSON {binary['exit_code']}"
    agree(binary, independent, what)
    return code, doc, binary, independent
