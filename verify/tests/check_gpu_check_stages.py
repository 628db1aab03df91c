#!/usr/bin/env python3
"""ci/gpu-check.sh's measuring and short-lease stages on a machine without a GPU, against
stand-ins: an nvidia-smi that reports compute capability 9.0 (then 8.0), a minictx that
prints a `minictx bench --device cuda` table and names the kernel families it was asked
for, a test_cuda_device that echoes its filter, an mpiexec that echoes its command line and
the families, and an SDPA timer that prints a CSV.
Checks that
- hopper runs each opt-in family on both passes (grid, table beside the SDPA table an
  earlier call kept in the build folder, layer deck), writes one file to $OUT, fails when
  a run fails, says so when no SDPA table is there, and does nothing on another GPU;
- acceptance runs every family the GPU has (three on 9.0, flash-mma alone on 8.0) and SDPA
  on issue 12's grid (D = 128) and prints one table of them all, in one file, and fails
  when a run fails;
- kernels runs the Hopper probes before the other kernel tests, then (on 9.0 only)
  `minictx verify` on each Hopper family, and fails when the tests fail or, on 9.0, when
  the probes were skipped.

  check_gpu_check_stages.py SOURCE_DIR"""
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


def run_stage(tmp, capability, minictx_rc=0, sdpa=True, stage="hopper", log_name="bench-hopper.log", tests_rc=0,
              tests_say=""):
    bin_dir, build, out = (os.path.join(tmp, d) for d in ("bin", "build", "out"))
    for d in (bin_dir, os.path.join(build, "miniapp"), os.path.join(build, "verify"), out):
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
    mpiexec_dir = os.path.join(tmp, "deps", "usr", "bin")
    os.makedirs(mpiexec_dir, exist_ok=True)
    executable(os.path.join(mpiexec_dir, "mpiexec.hydra"),
               "#!/bin/sh\necho \"stand-in mpiexec fwd=$MINICTX_FLASH_FWD bwd=$MINICTX_FLASH_BWD $*\"\n")
    executable(os.path.join(build, "verify", "test_cuda_device"),
               f"#!/bin/sh\necho \"stand-in tests $*\"\necho '{tests_say}'\nexit {tests_rc}\n")
    with open(os.path.join(tmp, "sdpa.py"), "w") as f:
        f.write(f"import sys\nprint('# stand-in sdpa', *sys.argv[1:])\nprint({SDPA!r})\n")
    kept = os.path.join(build, "bench-sdpa.csv")
    if sdpa:
        with open(kept, "w") as f:
            f.write(SDPA)
    elif os.path.exists(kept):
        os.remove(kept)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], OUT=out, BUILD_DIR=build,
               DEPS_PREFIX=os.path.join(tmp, "deps"), SDPA_BENCH=f"{sys.executable} {tmp}/sdpa.py")
    run = subprocess.run(["bash", script, stage], capture_output=True, text=True, env=env, cwd=source)
    log_path = os.path.join(out, log_name)
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

    families = ("mma", "wgmma", "wgmma_tma")
    run, files, log = run_stage(tmp, "9.0", stage="acceptance", log_name="bench-acceptance.log")
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["bench-acceptance.log"], files
    for family in families:
        assert f"stand-in minictx bench fwd={family} bwd={family}" in log, log
    assert "# stand-in sdpa --seq 4096,16384,32768,65536 --head-dims 128" in log, log
    assert ("| S | mask | D | pass | mma TFLOPS | wgmma TFLOPS | wgmma_tma TFLOPS | SDPA flash | SDPA cudnn "
            "| mma / FA2 | mma / cuDNN | wgmma / FA2 | wgmma / cuDNN | wgmma_tma / FA2 | wgmma_tma / cuDNN |") in log, log
    assert ("| 4096 | causal | 128 | fwd | 200.0 | 200.0 | 200.0 | 400.0 | 500.0 "
            "| 0.500 | 0.400 | 0.500 | 0.400 | 0.500 | 0.400 |") in log, log
    assert "gpu-check: stage acceptance took" in run.stdout, run.stdout

    run, _, log = run_stage(tmp, "8.0", stage="acceptance", log_name="bench-acceptance.log")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "fwd=mma bwd=mma" in log and "fwd=wgmma" not in log, log
    assert "| 4096 | causal | 128 | fwd | 200.0 | 0.364 | 400.0 | 500.0 | 0.500 | 0.400 |" in log, log

    run, _, _ = run_stage(tmp, "9.0", minictx_rc=1, stage="acceptance", log_name="bench-acceptance.log")
    assert run.returncode != 0 and "failed stages: acceptance" in run.stdout, run.stdout + run.stderr

    run, files, log = run_stage(tmp, "9.0", stage="kernels", log_name="ctest-kernels.log")
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["ctest-kernels.log"], files
    probes = "stand-in tests --gtest_filter=CudaWgmma.*:CudaTma.* --gtest_brief=1"
    rest = "stand-in tests --gtest_filter=-CudaWgmma.*:CudaTma.* --gtest_brief=1"
    assert probes in log and rest in log and log.index(probes) < log.index(rest), log
    # Then minictx verify on each Hopper family, after the kernel tests: 4 ranks, two points a dtype.
    for family in ("wgmma", "wgmma_tma"):
        line = next(x for x in log.splitlines() if x.startswith(f"stand-in mpiexec fwd={family} bwd={family} "))
        assert " -n 4 " in line and " verify " in line and line.count("--point") == 4, line
        assert line.count("model.head_dim=64") == 2 and line.count("model.head_dim=128") == 2, line
        assert "run.dtype=bf16" in line and "run.dtype=fp16" in line, line
        assert log.index(rest) < log.index(line), log

    run, _, log = run_stage(tmp, "8.0", stage="kernels", log_name="ctest-kernels.log")
    assert run.returncode == 0 and probes in log and "stand-in mpiexec" not in log, run.stdout + log

    run, _, _ = run_stage(tmp, "9.0", stage="kernels", log_name="ctest-kernels.log", tests_rc=1)
    assert run.returncode != 0 and "failed stages: kernels" in run.stdout, run.stdout + run.stderr

    # Skipped probes fail the stage on a Hopper GPU, not on another.
    skipped = "[  SKIPPED ] 2 tests, listed below:"
    run, _, log = run_stage(tmp, "9.0", stage="kernels", log_name="ctest-kernels.log", tests_say=skipped)
    assert run.returncode != 0 and "the Hopper probes were skipped" in log, run.stdout + log
    run, _, log = run_stage(tmp, "8.0", stage="kernels", log_name="ctest-kernels.log", tests_say=skipped)
    assert run.returncode == 0, run.stdout + log
print("gpu-check stages ok")
