#!/usr/bin/env python3
"""outputs/README.md's h5py recipes run as written: every line of its ```python blocks is
executed, in order (a statement with an indented body, such as a function, as one), on a results file a run just wrote (a 2-rank ring run of the quickstart
model with run.verify and run.ring_timeline, so that every group holds rows) and, for the
bench recipe, on a `minictx bench` file. A line that raises (a KeyError for a name the file
does not have) fails the test, naming the line.

  check_outputs_readme.py MINICTX MPIEXEC SOURCE_DIR BENCH_FILE"""
import os
import re
import subprocess
import sys
import tempfile

minictx, mpiexec, source, bench = sys.argv[1:5]
text = open(os.path.join(source, "outputs", "README.md")).read()
blocks = re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)
assert len(blocks) >= 2, "the results and the bench recipes"
with tempfile.TemporaryDirectory() as tmp:
    results = os.path.join(tmp, "run.h5")
    r = subprocess.run([mpiexec, "-n", "2", minictx, "run", "--set", "attention.backend=ring", "--set",
                        "run.verify=true", "--set", "run.ring_timeline=true", "-o", results], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    namespace = {}
    lines = 0
    for block in blocks:
        statements = []  # each a top-level line with the indented lines that follow it
        for line in block.splitlines():
            if statements and (line.startswith((" ", "\t")) or not line.strip()):
                statements[-1] += "\n" + line
            else:
                statements.append(line)
        for line in statements:
            code = line.replace('"outputs/run.h5"', repr(results)).replace('"bench.h5"', repr(bench))
            try:
                exec(code, namespace)  # noqa: S102 (the recipes are the documentation's own)
            except Exception as e:  # noqa: BLE001 (any failure of a recipe is the finding)
                raise AssertionError(f"outputs/README.md: {line!r} raised {type(e).__name__}: {e}") from e
            lines += 1
print(f"outputs readme ok: {lines} lines run")
