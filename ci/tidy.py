#!/usr/bin/env python3
"""clang-tidy (.clang-tidy) over minictx's sources in a build's compile database: each
finding printed once, then the count by check; exits 1 on any finding.

The sources: the program's, the reference and the verification driver; not the gtest
files, whose macro expansions are slow to analyse and say nothing about the program.

Like a compiler cache, a cache of clean results outlives the build and the clone: a
source whose clang-tidy input is unchanged since a run that found nothing in it is not
analysed again. Its key hashes all that decides the result: clang-tidy's version, this
script, .clang-tidy, the compile command and the translation unit as the front end sees
it (clang's preprocessor output, comments kept for NOLINT), with the source directory's
path taken out so that clones at other paths share the cache. Only a clean result is
stored: a finding prints on every run until it is fixed.

  ci/tidy.py [BUILD]    (default build; configured by `cmake --preset default` if needed)
Environment: MINICTX_TIDY_CACHE, the cache directory (default
${XDG_CACHE_HOME:-~/.cache}/minictx-tidy; empty: no cache)."""
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = re.compile(re.escape(SOURCE) + r"/(miniapp|backends|verify/driver|verify/reference)/.*\.cpp$")
FINDING = re.compile(r"(warning|error): .* \[[a-z0-9.,-]+\]$")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
UNUSED_DAYS = 30  # cache entries unused this long are removed


def cache_dir():
    if "MINICTX_TIDY_CACHE" in os.environ:
        return os.environ["MINICTX_TIDY_CACHE"] or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "minictx-tidy")


def tool_digest():
    """What every key shares: the tools' versions, this script and the configuration."""
    h = hashlib.sha256()
    for tool in ("clang-tidy", "clang++"):
        h.update(subprocess.run([tool, "--version"], capture_output=True, check=True).stdout)
    for path in (__file__, os.path.join(SOURCE, ".clang-tidy")):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.digest()


def key(entry, common):
    """The cache key of one compile database entry, or None if clang cannot preprocess it
    (clang-tidy then runs and reports why)."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    pre, skip = ["clang++"], False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg == "-o":
            skip = True
        elif arg != "-c":
            pre.append(arg)
    r = subprocess.run(pre + ["-E", "-C", "-o", "-"], cwd=entry["directory"], capture_output=True)
    if r.returncode != 0:
        return None
    h = hashlib.sha256(common)
    h.update(" ".join(args[1:]).replace(SOURCE, "@").encode())
    h.update(r.stdout.replace(SOURCE.encode(), b"@"))
    return h.hexdigest()


def check(entry, build, common, cache):
    """(file, findings or None when the cache held the file, clang-tidy's output)."""
    k = key(entry, common) if cache else None
    entry_path = os.path.join(cache, k) if k else None
    if entry_path and os.path.exists(entry_path):
        os.utime(entry_path)
        return entry["file"], None, ""
    r = subprocess.run(["clang-tidy", "--quiet", "-p", build, entry["file"]], capture_output=True, text=True,
                       errors="replace")
    out = COLOUR.sub("", r.stdout + r.stderr)
    findings = [line for line in out.splitlines() if FINDING.search(line)]
    if r.returncode != 0 and not findings:
        findings = [f"error: clang-tidy exited {r.returncode} on {entry['file']} [clang-tidy-failed]"]
    if not findings and entry_path:
        open(entry_path, "w").close()
    return entry["file"], findings, out


def prune(cache):
    limit = time.time() - UNUSED_DAYS * 86400
    for name in os.listdir(cache):
        path = os.path.join(cache, name)
        if os.path.getmtime(path) < limit:
            os.remove(path)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    database = os.path.join(build, "compile_commands.json")
    if not os.path.exists(database):
        subprocess.run(["cmake", "--preset", "default"], cwd=SOURCE, stdout=subprocess.DEVNULL, check=True)
    with open(database) as f:
        entries = [e for e in json.load(f) if SOURCES.search(e["file"])]
    # One job per core: os.cpu_count, not nproc, which obeys the OMP_NUM_THREADS=1 of ci/test.sh.
    jobs = len(os.sched_getaffinity(0))
    cache = cache_dir()
    if cache:
        os.makedirs(cache, exist_ok=True)
    print(f"tidy: {len(entries)} files on {jobs} jobs (cache: {cache or 'none'}; the findings print at the end)",
          flush=True)
    start = time.monotonic()
    common = tool_digest()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda e: check(e, build, common, cache), entries))
    analysed = [r for r in results if r[1] is not None]
    findings = sorted({f for r in analysed for f in r[1]})
    took = f"{time.monotonic() - start:.0f} s: {len(analysed)} analysed, {len(results) - len(analysed)} unchanged " \
           f"since a clean run"
    if cache:
        prune(cache)
    if not findings:
        print(f"tidy: clean ({took})")
        return 0
    print("\n".join(findings))
    for r in analysed:  # what a crash or a compile error said beyond its one line
        if any("[clang-tidy-failed]" in f or "[clang-diagnostic-error]" in f for f in r[1]):
            print(r[2])
    counts = {}
    for f in findings:
        check_name = re.search(r"\[([a-z0-9.,-]+)\]$", f).group(1)
        counts[check_name] = counts.get(check_name, 0) + 1
    print("tidy: findings by check:")
    for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"{n:7d} {name}")
    print(f"tidy: {len(findings)} findings ({took})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
