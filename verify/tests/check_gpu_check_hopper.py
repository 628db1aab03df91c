#!/usr/bin/env python3
"""ci/gpu-check.sh's hopper stage on a machine without a GPU, against stand-ins: an
nvidia-smi that reports compute capability 9.0 (then 8.0), and a minictx that prints a
`minictx bench --device cuda` table and names the kernel families it was asked for. Checks
that the stage runs each opt-in family on both passes (grid, table beside the SDPA table
an earlier call kept in the build folder, layer deck), writes one file to $OUT, fails when
a run fails, says so when no SDPA table is there, and does nothing on another GPU.

  check_gpu_check_hopper.py SOURCE_DIR"""
import os
import stat
import subprocess
import sys
import tempfile

source = sys.argv[1]
script = os.path.join(source, "ci", "gpu-check.sh")

BENCH = """minictx bench on CUDA GPU 0 of 1: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)
| S | mask | D | pass | time (ms) | TFLOPS | of GEMM |
|---|---|---|---|---|---|---|
| 4096 | causal | 128 | fwd | 1.000 | 200.0 | 0.364 |

calibration: bf16 GEMM 8192^3 through the device (cuBLASLt on cuda): 550.0 TFLOPS at the start, 548.0 TFLOPS at the end
"""
SDPA = """seq_len,causal,head_dim,pass,backend,ms,tflops
4096,True,128,fwd,flash,0.500,400.0
4096,True,128,fwd,cudnn,0.250,500.0
"""


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def run_stage(tmp, capability, minictx_rc=0, sdpa=True):
    bin_dir, build, out = (os.path.join(tmp, d) for d in ("bin", "build", "out"))
    for d in (bin_dir, os.path.join(build, "miniapp"), out):
        os.makedirs(d, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    executable(os.path.join(bin_dir, "nvidia-smi"),
               f"#!/bin/sh\ncase \"$*\" in *compute_cap*) echo {capability} ;; *name*) echo 'NVIDIA H100 80GB HBM3' ;; esac\n")
    with open(os.path.join(tmp, "bench.txt"), "w") as f:
        f.write(BENCH)
    executable(os.path.join(build, "miniapp", "minictx"),
               "#!/bin/sh\necho \"stand-in minictx $1 fwd=$MINICTX_FLASH_FWD bwd=$MINICTX_FLASH_BWD\"\n"
               f"[ \"$1\" = bench ] && cat {tmp}/bench.txt\nexit {minictx_rc}\n")
    kept = os.path.join(build, "bench-sdpa.csv")
    if sdpa:
        with open(kept, "w") as f:
            f.write(SDPA)
    elif os.path.exists(kept):
        os.remove(kept)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], OUT=out, BUILD_DIR=build,
               DEPS_PREFIX=os.path.join(tmp, "deps"))
    run = subprocess.run(["bash", script, "hopper"], capture_output=True, text=True, env=env, cwd=source)
    log_path = os.path.join(out, "bench-hopper.log")
    log = open(log_path).read() if os.path.exists(log_path) else ""
    return run, sorted(os.listdir(out)), log


with tempfile.TemporaryDirectory() as tmp:
    run, files, log = run_stage(tmp, "9.0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["bench-hopper.log"], files
    for family in ("wgmma", "wgmma_tma"):
        assert f"== MINICTX_FLASH_FWD={family} MINICTX_FLASH_BWD={family}" in log, log
        assert f"stand-in minictx bench fwd={family} bwd={family}" in log, log
        assert f"stand-in minictx run fwd={family} bwd={family}" in log, log
    # Each grid's table beside the kept SDPA table: 200 / 400 (FA2) and 200 / 500 (cuDNN).
    assert log.count("| 4096 | causal | 128 | fwd | 200.0 | 0.364 | 400.0 | 500.0 | 0.500 | 0.400 |") == 2, log
    assert "gpu-check: stage hopper took" in run.stdout, run.stdout

    run, _, log = run_stage(tmp, "9.0", sdpa=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert log.count("no SDPA table (run the bench stage first)") == 2, log

    run, _, _ = run_stage(tmp, "9.0", minictx_rc=1)
    assert run.returncode != 0 and "failed stages: hopper" in run.stdout, run.stdout + run.stderr

    run, files, log = run_stage(tmp, "8.0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "not a compute capability 9.0 GPU" in log and "stand-in" not in log, log
print("gpu-check hopper ok")
