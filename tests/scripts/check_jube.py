#!/usr/bin/env python3
"""The JUBE benchmark definition (jube/minictx.xml) runs the tiny class's host twin on
this machine (tags tiny twin local): its three launches, its verification run and the
submission report; `jube result` prints one row with the ranks per node, the median FOM and
its spread, VALID and compliant.
Exits 77 (ctest SKIP_RETURN_CODE) when JUBE is not installed (ci/setup-deps.sh installs it).

  check_jube.py MINICTX MPIEXEC SOURCE_DIR"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

minictx, mpiexec, source = sys.argv[1:4]
if not shutil.which("jube"):
    print("jube is not installed: skipped")
    sys.exit(77)
env = dict(os.environ, MINICTX=minictx, MPIEXEC=mpiexec)
with tempfile.TemporaryDirectory() as tmp:
    run = subprocess.run(["jube", "run", os.path.join(source, "jube", "minictx.xml"), "--tag", "tiny", "twin", "local",
                          "-o", tmp, "-e", "--hide-animation"], capture_output=True, text=True, env=env)
    print(run.stdout[-3000:] + run.stderr[-3000:])
    assert run.returncode == 0, run.returncode
    result = subprocess.run(["jube", "result", "-a", tmp], capture_output=True, text=True, env=env)
    print(result.stdout + result.stderr)
    assert result.returncode == 0, result.returncode
    rows = [line for line in result.stdout.splitlines() if re.match(r"^\|?\s*tiny\s*\|", line)]
    assert len(rows) == 1, "one result row for the tiny class"
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[:5] == ["tiny", "-twin", "local", "1", "1"], cells
    assert float(cells[5]) > 0 and "%" in cells[6], cells
    assert cells[7:] == ["VALID", "compliant"], cells
print("jube ok")
