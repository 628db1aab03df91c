#!/usr/bin/env python3
"""The flash attention kernels run on tensor cores; a regression to SIMT fails here, on a
machine without a GPU (issue 12). Each source is compiled as the build compiles it, for
each of the build's architectures, keeping the PTX: every flash kernel must hold the
m16n8k16 MMA fed by ldmatrix, and the SIMT kernels none (so the check can tell the two
apart); the Hopper kernels (--wgmma) must hold wgmma.mma_async where the architecture is
90a (elsewhere they are not built), spill no register, and ptxas must not serialise their
wgmma operations for want of registers (its note C7512); those pipelined as
FlashAttention-3 (--pipelined) must keep a product in flight (wgmma.wait_group 1) and the
consumers' turns (bar.arrive); the one-pass backwards (--one-pass) must load by TMA, hand
registers over (setmaxnreg) and add dQ by bulk reduce-adds inside the kernel. An mma.sync
kernel may spill only what --known-spill lists for it (by kernel and architecture, at most
that many bytes), so a new spill fails. The --spill-free sources (among the --simt ones:
the tuned layer kernels) must spill no register either. The
--document-twins sources must hold each kernel twice, the last template argument (kDocs)
false and true: the default and its twin that masks packed documents. Where cuobjdump is
installed (a full CUDA toolkit) the SASS must also hold HMMA (HGMMA for the Hopper kernels). Registers
and spills per kernel, from ptxas -v, are printed for docs/performance.md.

  check_tensor_cores.py --nvcc NVCC --include DIR --arch 80 --arch 90a \
      --flash flash_fwd_sm80.cu --flash flash_bwd_sm80.cu --wgmma flash_fwd_sm90.cu \
      --simt attention_simt.cu --work DIR
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys


def compile_kept(args, source, arch):
    """Compiles `source` for sm_`arch` keeping the PTX; returns (ptx text, cubin path, ptxas log)."""
    stem = os.path.splitext(os.path.basename(source))[0]
    keep = os.path.join(args.work, f"{stem}.sm_{arch}")
    os.makedirs(keep, exist_ok=True)
    cubin = os.path.join(keep, f"{stem}.cubin")
    cmd = [args.nvcc, "-O3", "-DNDEBUG", "-std=c++17", f"-arch=sm_{arch}", "-cubin", "-Xptxas", "-v",
           "--keep", "--keep-dir", keep, "-o", cubin, source]
    for inc in args.include:
        cmd += ["-I", inc]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"check_tensor_cores: nvcc failed on {source} for sm_{arch}:\n{run.stderr}")
    with open(os.path.join(keep, f"{stem}.ptx")) as f:
        return f.read(), cubin, run.stderr


def ptx_entries(ptx):
    """{entry name: its body} of a PTX module."""
    parts = re.split(r"^(?:\.visible\s+)?\.entry\s+", ptx, flags=re.M)[1:]
    return {p.split("(", 1)[0].strip(): p for p in parts}


def sass_functions(nvcc, cubin):
    """{function name: its SASS}, or None without cuobjdump (on the PATH or beside nvcc)."""
    tool = shutil.which("cuobjdump") or os.path.join(os.path.dirname(os.path.abspath(nvcc)), "cuobjdump")
    if not os.access(tool, os.X_OK):
        return None
    out = subprocess.run([tool, "--dump-sass", cubin], capture_output=True, text=True, check=True).stdout
    parts = re.split(r"^\s*Function : ", out, flags=re.M)[1:]
    return {p.split("\n", 1)[0].strip(): p for p in parts}


def short(name):
    """flash_bwd_kernel<128, 8, 32, true> from the mangled name, for the printed table."""
    m = re.search(r"_cu_[0-9a-f]{8}\d+([a-z]\w*?_kernel)(?:I(.*?E)E)?", name)
    if not m:
        return name
    targs = re.findall(r"Li(\d+)E|Lb([01])E", m.group(2) or "")
    # The tuned layer kernels' element readers: Typed<float>, Typed<__half>, ..., Mixed.
    readers = re.findall(r"TypedI(f|6__half|13__nv_bfloat16)E|5(Mixed)E", m.group(2) or "")
    if readers:
        names = {"f": "float", "6__half": "__half", "13__nv_bfloat16": "__nv_bfloat16"}
        return m.group(1) + "<" + ", ".join(f"Typed<{names[t]}>" if t else b for t, b in readers) + ">"
    if not targs:
        return m.group(1)
    return m.group(1) + "<" + ", ".join(a or ("true" if b == "1" else "false") for a, b in targs) + ">"


def resources(log):
    """{entry name: (registers, spill store bytes)} from ptxas -v."""
    found = {}
    current = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
            found[current] = [0, 0]
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and current:
            found[current][1] = int(m.group(1))
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            found[current][0] = int(m.group(1))
    return found


parser = argparse.ArgumentParser()
parser.add_argument("--nvcc", required=True)
parser.add_argument("--include", action="append", default=[])
parser.add_argument("--arch", action="append", required=True)
parser.add_argument("--flash", action="append", required=True)
parser.add_argument("--simt", action="append", required=True)
parser.add_argument("--wgmma", action="append", default=[])
# Hopper kernels pipelined as FlashAttention-3 (one of the --wgmma sources): a product left
# in flight while the softmax runs (wgmma.wait_group 1) and the consumers' turns (bar.arrive).
parser.add_argument("--pipelined", action="append", default=[])
# Hopper backwards in one pass, warp-specialized (one of the --wgmma sources): tiles loaded
# by TMA, registers handed from the producer to the consumers (setmaxnreg), and dQ added to
# global memory inside the kernel by bulk reduce-adds, no second kernel.
parser.add_argument("--one-pass", action="append", default=[])
# KERNEL@ARCH=BYTES: a spill of the mma.sync kernels measured and accepted, e.g.
# "flash_fwd_kernel<128, 4, 32, 2, false>@90a=28".
parser.add_argument("--known-spill", action="append", default=[])
# Sources whose kernels come in pairs, the last template argument (kDocs) false and true:
# each kernel has its twin that masks packed documents inside it (the -documents families).
parser.add_argument("--document-twins", action="append", default=[])
# --simt sources whose kernels must spill no register (the tuned layer kernels).
parser.add_argument("--spill-free", action="append", default=[])
parser.add_argument("--work", required=True)
args = parser.parse_args()
if not set(args.pipelined) <= set(args.wgmma) or not set(args.one_pass) <= set(args.wgmma):
    sys.exit("check_tensor_cores: a --pipelined or --one-pass source must be a --wgmma source")
if not set(args.spill_free) <= set(args.simt):
    sys.exit("check_tensor_cores: a --spill-free source must be a --simt source")

known_spill = {}
for entry in args.known_spill:
    m = re.fullmatch(r"(.+)@(\w+)=(\d+)", entry)
    if not m:
        sys.exit(f"check_tensor_cores: --known-spill takes KERNEL@ARCH=BYTES, got '{entry}'")
    known_spill[(m.group(1), m.group(2))] = int(m.group(3))

# Every (source, arch) compile at once, one per core: they are independent, and the test
# otherwise spends a minute on them one after another.
jobs = [(s, a) for a in args.arch for s in args.flash + args.simt]
jobs += [(s, a) for a in args.arch if a == "90a" for s in args.wgmma]
with concurrent.futures.ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0))) as pool:
    compiled = dict(zip(jobs, pool.map(lambda job: compile_kept(args, *job), jobs)))

failures = []
sass_checked = False
print("| kernel | arch | registers | spill stores (bytes) |")
print("|---|---|---:|---:|")
for arch in args.arch:
    for source, tensor_cores in [(s, True) for s in args.flash] + [(s, False) for s in args.simt]:
        ptx, cubin, log = compiled[(source, arch)]
        entries = ptx_entries(ptx)
        if not entries:
            failures.append(f"{source} sm_{arch}: no kernel in the PTX")
        for name, body in entries.items():
            has_mma = "mma.sync.aligned.m16n8k16" in body
            if tensor_cores and not (has_mma and "ldmatrix.sync.aligned" in body):
                failures.append(f"{short(name)} sm_{arch}: no m16n8k16 MMA fed by ldmatrix in its PTX")
            if not tensor_cores and has_mma:
                failures.append(f"{short(name)} sm_{arch}: a SIMT kernel holds MMA (the check cannot tell)")
        sass = sass_functions(args.nvcc, cubin)
        if sass is not None:
            sass_checked = True
            for name, body in sass.items():
                if tensor_cores != ("HMMA" in body):
                    failures.append(f"{short(name)} sm_{arch}: HMMA {'missing from' if tensor_cores else 'in'} its SASS")
        for name, (regs, spill) in resources(log).items():
            print(f"| {short(name)} | sm_{arch} | {regs} | {spill} |")
            allowed = known_spill.get((short(name), arch), 0)
            if (tensor_cores or source in args.spill_free) and spill > allowed:
                failures.append(f"{short(name)} sm_{arch}: {spill} bytes of register spills "
                                f"({allowed} known)")

for arch in [a for a in args.arch if a == "90a"]:
    for source in args.wgmma:
        ptx, cubin, log = compiled[(source, arch)]
        entries = ptx_entries(ptx)
        if not entries:
            failures.append(f"{source} sm_{arch}: no kernel in the PTX")
        # ptxas serialises a kernel's wgmma operations (each waits for the last) when their
        # registers do not fit: the asynchronous tensor-core pipeline is then lost.
        for m in re.finditer(r"\(C7512\)[^']*'([^']+)'", log):
            failures.append(f"{short(m.group(1))} sm_{arch}: ptxas serialises its wgmma operations (C7512)")
        for name, body in entries.items():
            if "wgmma.mma_async" not in body:
                failures.append(f"{short(name)} sm_{arch}: no wgmma.mma_async in its PTX")
            if source in args.pipelined:
                if "wgmma.wait_group.sync.aligned 1;" not in body:
                    failures.append(f"{short(name)} sm_{arch}: no product left in flight (wgmma.wait_group 1)")
                if "bar.arrive" not in body:
                    failures.append(f"{short(name)} sm_{arch}: no consumer turns (bar.arrive)")
            if source in args.one_pass:
                for instruction, what in (("cp.async.bulk.tensor", "no TMA load"),
                                          ("setmaxnreg.inc", "no register hand-over (setmaxnreg)"),
                                          ("cp.reduce.async.bulk", "no dQ reduce-add in the kernel")):
                    if instruction not in body:
                        failures.append(f"{short(name)} sm_{arch}: {what} ({instruction})")
        sass = sass_functions(args.nvcc, cubin)
        if sass is not None:
            sass_checked = True
            for name, body in sass.items():
                if "HGMMA" not in body:
                    failures.append(f"{short(name)} sm_{arch}: HGMMA missing from its SASS")
        for name, (regs, spill) in resources(log).items():
            print(f"| {short(name)} | sm_{arch} | {regs} | {spill} |")
            if spill:
                failures.append(f"{short(name)} sm_{arch}: {spill} bytes of register spills")

for source in args.document_twins:
    for arch in args.arch:
        if (source, arch) not in compiled:
            continue
        names = {short(n) for n in ptx_entries(compiled[(source, arch)][0])}
        for name in names:
            m = re.fullmatch(r"(.*, )(true|false)>", name)
            twin = m and m.group(1) + ("false" if m.group(2) == "true" else "true") + ">"
            if not twin or twin not in names:
                failures.append(f"{name} sm_{arch}: no documents twin (its last template argument flipped)")

print("SASS:", "checked with cuobjdump" if sass_checked else "not checked (no cuobjdump here); PTX checked")
if failures:
    sys.exit("check_tensor_cores: " + "; ".join(failures))
print("tensor cores ok")
