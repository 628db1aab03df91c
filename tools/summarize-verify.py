#!/usr/bin/env python3
"""One table from a log of `minictx verify` launches (ci/gpu-check.sh grid): per launch
(a line '== NAME' before its output), the points verified, VALID and INVALID, and whether
the launch failed; then each INVALID point with the tensors out of tolerance. Exits 1 when
any point is INVALID, a launch failed or verified nothing.

  summarize-verify.py LOG"""
import re
import sys


def launches(lines):
    """[(name, [(point, verdict, [failing tensor rows])], failed)] in log order."""
    found = []
    point = None
    for line in lines:
        if line.startswith("== "):
            found.append([line[3:].strip(), [], False])
            continue
        if not found:
            continue
        if line.startswith("verify "):
            point = [line.split(" at ", 1)[-1].strip() if " at " in line else line.strip(), None, []]
            found[-1][1].append(point)
        elif point is not None and re.fullmatch(r"\| \S+ \|.*\| NO \|", line.strip()):
            point[2].append(line.strip())
        elif point is not None and line.strip() in ("VALID", "INVALID"):
            point[1] = line.strip()
            point = None
        elif line.startswith("exit status: failed"):
            found[-1][2] = True
    return found


def main():
    with open(sys.argv[1]) as f:
        found = launches(f.read().splitlines())
    bad = not found
    print("| launch | points | VALID | INVALID | exit |")
    print("|---|---:|---:|---:|---|")
    for name, points, failed in found:
        valid = sum(1 for p in points if p[1] == "VALID")
        invalid = sum(1 for p in points if p[1] == "INVALID")
        bad = bad or failed or invalid > 0 or not points
        print(f"| {name} | {len(points)} | {valid} | {invalid} | {'failed' if failed else 'ok'} |")
    for name, points, _ in found:
        for label, verdict, rows in points:
            if verdict == "INVALID":
                print(f"INVALID [{name}] {label}")
                for row in rows:
                    print(f"    {row}")
    sys.exit(1 if bad else 0)


main()
