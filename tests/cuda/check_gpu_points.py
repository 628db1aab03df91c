#!/usr/bin/env python3
"""Every point of every gpu-labelled `minictx verify` launch runs on the cuda device.

A case marked GPU but left on the deck's default device would verify on the host and pass
on a GPU machine without touching the GPU. Reads the build's test list (ctest
--show-only=json-v1) and fails naming each such point; fails too when it finds no launch.
Usage: check_gpu_points.py CTEST BUILD_DIR
"""
import json
import subprocess
import sys

ctest, build = sys.argv[1:3]
listing = json.loads(subprocess.run([ctest, "--show-only=json-v1"], cwd=build, check=True,
                                    capture_output=True, text=True).stdout)
launches = points = 0
wrong = []
for test in listing["tests"]:
    props = {p["name"]: p["value"] for p in test.get("properties", [])}
    cmd = test.get("command", [])
    if "gpu" not in props.get("LABELS", []) or "verify" not in cmd:
        continue
    launches += 1
    for i, arg in enumerate(cmd[:-1]):
        if arg == "--point":
            points += 1
            if "run.device=cuda" not in cmd[i + 1].split():
                wrong.append(f"{test['name']}: --point \"{cmd[i + 1]}\"")
for w in wrong:
    print("not on the cuda device:", w)
if launches == 0:
    sys.exit("check_gpu_points: no gpu-labelled verify launch found")
print(f"{launches} gpu verify launches, {points} points, {len(wrong)} off the cuda device")
if not wrong:
    print("gpu points ok")
sys.exit(1 if wrong else 0)
