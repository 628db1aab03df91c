#!/usr/bin/env python3
"""One mpiexec launch of minictx, judged on its exit status and its output together.

  check_launch.py verify CASES -- COMMAND...
      CASES: the comma-separated names of the points COMMAND verifies, in order. Passes
      when COMMAND exits 0, prints exactly one VALID line per case and no INVALID or
      error line.
  check_launch.py error REGEX -- COMMAND...
      Passes when COMMAND exits 2, REGEX (Python syntax) matches its output, and the
      output holds exactly one error line, which starts with "minictx: error: ".

The launcher's exit status is the ranks' (MPICH's hydra and Open MPI's mpiexec both
return the status of a rank that failed, 2 here, when every rank exits 2); the lines a
launcher adds about failed ranks (Open MPI's banner) are not minictx's and are ignored.
"""
import re
import subprocess
import sys


def run(command):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    text = done.stdout.decode(errors="replace")
    sys.stdout.write(text)
    return done.returncode, text.splitlines()


def error_lines(lines):
    return [line for line in lines if "minictx: error" in line or line.startswith("minictx: ")]


def check_verify(cases, command):
    names = cases.split(",")
    code, lines = run(command)
    verdicts = [line for line in lines if line in ("VALID", "INVALID")]
    problems = []
    for i, name in enumerate(names):
        print(f"check_launch: {name}: {verdicts[i] if i < len(verdicts) else 'no verdict'}")
    if code != 0:
        problems.append(f"exit status {code}, expected 0")
    if verdicts.count("VALID") != len(names) or len(verdicts) != len(names):
        problems.append(f"{verdicts.count('VALID')} VALID of {len(verdicts)} verdicts, expected {len(names)} VALID")
    problems += [f"error line: {line}" for line in error_lines(lines)]
    return problems


def check_error(regex, command):
    code, lines = run(command)
    problems = []
    if code != 2:
        problems.append(f"exit status {code}, expected 2")
    if not re.search(regex, "\n".join(lines)):
        problems.append(f"no match for /{regex}/")
    errors = error_lines(lines)
    if len(errors) != 1 or not errors[0].startswith("minictx: error: "):
        problems.append(f"expected one 'minictx: error: ' line, got {len(errors)}: {errors}")
    return problems


def main(argv):
    if len(argv) < 4 or argv[0] not in ("verify", "error") or argv[2] != "--":
        sys.exit("usage: check_launch.py verify CASES -- COMMAND... | error REGEX -- COMMAND...")
    check = check_verify if argv[0] == "verify" else check_error
    problems = check(argv[1], argv[3:])
    for p in problems:
        print(f"check_launch: FAILED: {p}")
    if problems:
        return 1
    print("check_launch: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
