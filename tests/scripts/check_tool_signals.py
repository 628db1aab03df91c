#!/usr/bin/env python3
"""Every tool script that starts mpiexec, minictx, Spack, Python or a build passes the
signals it gets on to them and waits for them (tools/signals.bash's `forward`): a tool
stopped with `kill` must not leave its ranks running. The job scripts in jobs/ wait for
the launcher instead (jobs/job-status.bash: the batch system signals the ranks itself).

  check_tool_signals.py SOURCE_DIR"""
import glob
import os
import re
import sys

source = sys.argv[1]
LONG = re.compile(r"mpiexec|minictx|spack|python", re.I)


def starts_long_child(line, functions):
    """Whether LINE's command starts one of the long-running children itself: not through
    forward, nor through one of the script's FUNCTIONS (which use it)."""
    words = line.strip().lstrip("(").split()
    if not words or words[0].startswith("#") or "=" in words[0] or words[0].endswith("()"):
        return False
    if words[0] in functions:
        return False
    first = words[0].strip('"').replace("$", "").strip("{}")
    return bool(LONG.search(first)) or (first == "cmake" and "--build" in words)


problems = []
for path in sorted(glob.glob(os.path.join(source, "tools", "*.sh")) + [os.path.join(source, "jobs", "quickstart.sh")]):
    name = os.path.relpath(path, source)
    with open(path) as f:
        lines = f.read().splitlines()
    functions = {m.group(1) for line in lines if (m := re.match(r"^(\w+)\(\) \{", line))}
    problems += [f"{name}:{n}: not started through forward: {line.strip()}"
                 for n, line in enumerate(lines, 1) if starts_long_child(line, functions)]
    forwards = any(line.strip().startswith("forward ") for line in lines)
    if forwards and not any(re.match(r"\. .*signals\.bash\"?$", line.strip()) for line in lines):
        problems.append(f"{name}: calls forward without sourcing tools/signals.bash")
for p in problems:
    print(p)
if problems:
    sys.exit(1)
print("tool signals ok")
