#!/usr/bin/env python3
"""ci/gpu-check.sh's short-lease stages on a machine without a GPU, against stand-ins: an
nvidia-smi that reports compute capability 9.0 (then 8.0), a minictx that prints a
`minictx bench --device cuda` table, answers `verify` with a VALID (or INVALID) point and
writes a results file for `run`, each naming the kernel family it was asked for, a
test_cuda_device that echoes its filter, an mpiexec that runs its command, and SDPA and
PyTorch-layer timers that print their CSVs.
Checks that
- acceptance measures every family the GPU runs (sm80, sm90 and sm90-onepass on 9.0, sm80 alone on 8.0)
  and SDPA on the acceptance grid (D = 128) and prints one table of them all, in one file,
  and fails when a run fails;
- kernels runs the Hopper probes before the other kernel tests, and fails when the tests
  fail or, on 9.0, when the probes were skipped;
- grid verifies inputs/gpu-flash-grid.yaml at 4 ranks and `local` at 1 rank once per
  family, prints the count of VALID points per launch, and fails on an INVALID point;
- layer runs the layer deck on each family, and with the tuned layer kernels, beside
  PyTorch's layer and prints one table with the ratios;
- trace records the layer's timeline, writes its trace and prints its phases beside the
  projection's;
- nccl runs test_nccl_comm, two ranks of `verify` with comm nccl, a one-rank model step
  (which must exit 0) and one-rank runs with the test seam's NCCL error and stall, and passes only when each exits as it must with
  one line of minictx's own of the expected form (the refusal naming the bus id, the
  error's, the watchdog's);
- gradsums hands its check the unpacked mpiexec, the cuda build's minictx and the cuda
  device, keeps the check's output and fails when the check fails;
- a command is refused at once (exit 2, nothing run) for packages missing from .gpu-debs
  where they still have to be unpacked, an unknown stage, and a FAMILIES entry the GPU
  does not run; FAMILIES picks the families (auto: the default one alone, sm90 on 9.0);
- test fails when gpu tests are skipped on a machine whose nvidia-smi lists a GPU, naming
  the first one's error, and not where none is listed; it leaves the kernel tests to the
  kernels stage;
- layer prints each family's phase times per step;
- tiny measures the class and starts its verification in a session of its own, which a
  later command's tiny-report waits for and joins (report --submission), copying both
  results files; without the tiny run it fails and says why;
- the two commands docs/nvidia.md gives for a 15-minute allocation run in turn on one
  machine and pass, each within the files the device tool returns, within 10 minutes
  each and 15 in all with the machine's start.

  check_gpu_check_stages.py SOURCE_DIR"""
import os
import re
import shutil
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


MINICTX = """#!/bin/sh
case "$*" in *run.comm=nccl*run.mode=model*)
  echo "stand-in minictx $1 nccl model"; echo "FOM backend=local world=1 UNVERIFIED"; exit {nccl_model_rc} ;;
*run.comm=nccl*)
  echo "stand-in minictx $1 nccl fault=$MINICTX_INJECT_FAULT"
  for i in $(seq {nccl_lines}); do
    if [ "$MINICTX_INJECT_FAULT" = 0:stall ]; then
      echo "minictx: watchdog: rank 0 waited 5.0 s in ncclAllGather (group of 1 ranks (0)) at point_0000 allgather; aborting the job (run.watchdog_seconds = 5 s)"
    elif [ "$MINICTX_INJECT_FAULT" = 0:shift ]; then
      echo "minictx: error: rank 0: NCCL reported an error (injected by MINICTX_INJECT_FAULT) in ncclAllGather (group of 1 ranks (0)) at point_0000 allgather; aborting the job"
    else
      echo "minictx: error: comm nccl needs a GPU of its own per rank, but ranks 0 and 1 both use GPU 0000:3B:00.0 on gpu1; bind one GPU per rank"
    fi
  done
  exit {nccl_rc} ;;
esac
family=$(echo "$*" | sed -n 's/.*--kernels \\([a-z0-9-]*\\).*/\\1/p;s/.*attention.kernels=\\([a-z0-9-]*\\).*/\\1/p')
echo "stand-in minictx $1 kernels=$family"
case "$*" in *benchmark.role=verification*)
  echo "VERIFICATION class=tiny backend=local seq=1024 VALID (verification run of class tiny)"; echo VALID ;;
*inputs/benchmark/tiny.yaml*) echo "FOM class=tiny backend=local tokens/s/device=3000.0 UNVERIFIED (measurement)" ;;
esac
case "$1" in
  bench) cat {tmp}/bench.txt ;;
  verify) echo "verify model backend=ring world=4 against fp64 at model.head_dim=64"
          echo "| grads/layer0/wq | 0.1 | 0.1 | 0.1 | 0.005 | {verdict_row} |"
          echo "{verdict}" ;;
  report) case "$*" in *--trace*) out=$(echo "$*" | sed -n 's/.* -o \\([^ ]*\\).*/\\1/p')
                                  echo '{{"traceEvents": []}}' > "$out" ;;
                      *--compare*) echo "| point | phase (per step) | measured ms | projected ms |" ;;
                      *) echo "stand-in report $*"; echo "| tiny | 3000.0 | VALID | compliant |" ;;
          esac ;;
  project) touch "$(echo "$*" | sed -n 's/.* -o \\([^ ]*\\).*/\\1/p')" ;;
  run) out=$(echo "$*" | sed -n 's/.* -o \\([^ ]*\\).*/\\1/p')
       case "$*" in *gpu-documents.yaml*)
       {python} -c "
import h5py, sys
# 64 documents at 400 TFLOPS without them: 360 where the kernels mask them, 200 split.
with h5py.File(sys.argv[1], 'w') as f:
    f.attrs['format'] = 'minictx-results'
    for i, (docs, tflops) in enumerate([('none', 400.0),
                                        ('[' + ', '.join(['512'] * 64) + ']',
                                         360.0 if sys.argv[2].endswith('-documents') else 200.0)]):
        g = f.create_group(f'points/point_{{i}}')
        g.attrs['skipped_reason'] = ''
        labels = g.create_group('labels').attrs
        labels['seq_len'], labels['documents'], labels['causal'] = '32768', docs, 'true'
        g.create_group('metrics').attrs['tflops_per_device_causal'] = tflops
" "$out" "$family"; exit {rc} ;;
       esac
       {python} -c "
import h5py, sys
with h5py.File(sys.argv[1], 'w') as f:
    f.attrs['format'] = 'minictx-results'
    for i, (s, ms) in enumerate([(16384, 60.0), (32768, 160.0)]):
        g = f.create_group(f'points/point_{{i}}')
        g.attrs['index'], g.attrs['iters'] = i, 3
        g.attrs['skipped_reason'] = ''
        ph = g.create_group('phase_seconds')
        for name, sec in [('forward', 0.06), ('gemm_fwd', 0.03), ('attention_fwd', 0.015), ('backward', 0.12),
                          ('gemm_bwd', 0.054), ('attention_bwd', 0.045), ('recompute', 0.0),
                          ('grad_allreduce', 0.003)]:
            ph.create_dataset(name, data=[sec * (i + 1)])
        g.create_group('labels').attrs['seq_len'] = str(s)
        m = g.create_group('metrics').attrs
        m['latency_ms'], m['mfu'], m['peak_memory_mb'] = ms, 0.5, 5000.0
" "$out" ;;
esac
exit {rc}
"""
TORCH_LAYER = "seq_len,ms,tflops_mpt,mfu_mpt,peak_mem_gb\n16384,50.00,600.0,0.6000,4.50\n32768,128.00,680.0,0.6800,8.00"


CTEST = """#!/bin/sh
echo "stand-in ctest $*"
case "$*" in
  *flash_kernels_use_tensor_cores*) echo "1: | flash_fwd_kernel<64, 4, 64, 2, true> | sm_90a | 128 | 0 |"
                                    echo "100% tests passed, 0 tests failed out of 1" ;;
  *-V*) echo "7: minictx: error: rank 0: device cuda: no usable GPU (cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version)" ;;
  *) echo "100% tests passed, 0 tests failed out of 3"
     if [ -n "{skipped}" ]; then
       echo; echo "The following tests did not run:"
       printf '\\t  7 - verify_cuda_p1_gpu (Skipped)\\n\\t  9 - bench_cuda (Skipped)\\n'
     fi ;;
esac
"""


def run_stage(tmp, capability, minictx_rc=0, stage="acceptance", log_name="bench-acceptance.log", tests_rc=0,
              tests_say="", invalid=False, nccl_rc=2, nccl_lines=1, nccl_model_rc=0, listed=True, skipped=False,
              env_extra=None, fresh=True, unpacked=True, grad_sums_rc=0):
    """Runs ci/gpu-check.sh STAGE (a string of stages, or a shell command line that runs it)
    against the stand-ins; returns the run, the files of $OUT but build.log, and LOG_NAME's text."""
    bin_dir, build, out = (os.path.join(tmp, d) for d in ("bin", "build", "out"))
    for d in (bin_dir, os.path.join(build, "miniapp"), os.path.join(build, "tests"), out):
        os.makedirs(d, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    # The scripts' python3 is this test's (the one with h5py), as on the GPU machine.
    executable(os.path.join(bin_dir, "python3"), f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    gpu_line = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)" if listed else ""
    executable(os.path.join(bin_dir, "nvidia-smi"),
               f"#!/bin/sh\necho \"$*\" >>{tmp}/nvidia-smi.calls\n"
               f"case \"$*\" in *compute_cap*) echo {capability} ;; *name*) echo 'NVIDIA H100 80GB HBM3' ;;"
               f" -L) echo '{gpu_line}' ;; esac\n")
    executable(os.path.join(bin_dir, "cmake"), "#!/bin/sh\necho \"stand-in cmake $*\"\n")
    executable(os.path.join(bin_dir, "ctest"), CTEST.format(skipped="yes" if skipped else ""))
    with open(os.path.join(tmp, "bench.txt"), "w") as f:
        f.write(BENCH)
    executable(os.path.join(build, "miniapp", "minictx"),
               MINICTX.format(tmp=tmp, rc=minictx_rc, python=sys.executable, nccl_rc=nccl_rc, nccl_lines=nccl_lines, nccl_model_rc=nccl_model_rc,
                              verdict="INVALID" if invalid else "VALID", verdict_row="NO" if invalid else "yes"))
    # The packages unpacked and the build configured, as after a deps stage.
    mpiexec_dir = os.path.join(tmp, "deps", "usr", "bin")
    os.makedirs(mpiexec_dir, exist_ok=True)
    stamp = os.path.join(tmp, "deps", ".unpacked")
    if unpacked:
        open(stamp, "w").close()
    elif os.path.exists(stamp):
        os.remove(stamp)
    open(os.path.join(build, "CMakeCache.txt"), "w").close()
    executable(os.path.join(mpiexec_dir, "mpiexec.hydra"),
               "#!/bin/sh\necho \"stand-in mpiexec $*\"\nshift 2\nexec \"$@\"\n")
    for tests in ("test_cuda_device", "test_nccl_comm"):
        executable(os.path.join(build, "tests", tests),
                   f"#!/bin/sh\necho \"stand-in {tests} $*\"\necho '{tests_say}'\nexit {tests_rc}\n")
    with open(os.path.join(tmp, "sdpa.py"), "w") as f:
        f.write(f"import sys\nprint('# stand-in sdpa', *sys.argv[1:])\nprint({SDPA!r})\n")
    with open(os.path.join(tmp, "layer.py"), "w") as f:
        f.write(f"print({TORCH_LAYER!r})\n")
    with open(os.path.join(tmp, "grad_sums.py"), "w") as f:
        f.write(f"import sys\nprint('stand-in grad sums check', *sys.argv[1:])\n"
                f"print('gradient sums ok' if {grad_sums_rc} == 0 else 'GRADIENT SUMS FAILED')\nsys.exit({grad_sums_rc})\n")
    if fresh and os.path.exists(os.path.join(tmp, "nvidia-smi.calls")):
        os.remove(os.path.join(tmp, "nvidia-smi.calls"))
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], OUT=out, BUILD_DIR=build,
               DEPS_PREFIX=os.path.join(tmp, "deps"), DEBS=os.path.join(tmp, "no-debs"),
               TINY_DIR=os.path.join(tmp, "tiny"), SDPA_BENCH=f"{sys.executable} {tmp}/sdpa.py",
               TORCH_LAYER=f"{sys.executable} {tmp}/layer.py", GRAD_SUMS_CHECK=f"{sys.executable} {tmp}/grad_sums.py")
    env.pop("FAMILIES", None)
    env.update(env_extra or {})
    command = stage if "ci/gpu-check.sh" in stage else f"ci/gpu-check.sh {stage}"
    run = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, cwd=source)
    log_path = os.path.join(out, log_name)
    log = open(log_path).read() if os.path.exists(log_path) else ""
    return run, sorted(f for f in os.listdir(out) if f != "build.log"), log


# Every family a Hopper GPU runs, the opt-in one-pass backward's among them: grid,
# acceptance and layer measure each.
HOPPER_FAMILIES = ("sm80", "sm90", "sm90-onepass")

with tempfile.TemporaryDirectory() as tmp:
    run, files, log = run_stage(tmp, "9.0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["bench-acceptance.log"], files
    for family in HOPPER_FAMILIES:
        assert f"stand-in minictx bench kernels={family}" in log, log
    assert "# stand-in sdpa --seq 4096,16384,32768,65536 --head-dims 128" in log, log
    assert ("| S | mask | D | pass | sm80 TFLOPS | sm90 TFLOPS | sm90-onepass TFLOPS | SDPA flash | SDPA cudnn "
            "| sm80 / FA2 | sm80 / cuDNN | sm90 / FA2 | sm90 / cuDNN | sm90-onepass / FA2 | sm90-onepass / cuDNN |") in log, log
    assert ("| 4096 | causal | 128 | fwd | 200.0 | 200.0 | 200.0 | 400.0 | 500.0 | 0.500 | 0.400 | 0.500 | 0.400 "
            "| 0.500 | 0.400 |") in log, log
    assert "gpu-check: stage acceptance took" in run.stdout, run.stdout

    run, _, log = run_stage(tmp, "8.0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "kernels=sm80" in log and "kernels=sm90" not in log, log
    assert "| 4096 | causal | 128 | fwd | 200.0 | 0.364 | 400.0 | 500.0 | 0.500 | 0.400 |" in log, log

    run, _, _ = run_stage(tmp, "9.0", minictx_rc=1)
    assert run.returncode != 0 and "failed stages: acceptance" in run.stdout, run.stdout + run.stderr

    run, files, log = run_stage(tmp, "9.0", stage="kernels", log_name="ctest-kernels.log")
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["ctest-kernels.log"], files
    probes = "stand-in test_cuda_device --gtest_filter=CudaWgmma.*:CudaTma.* --gtest_brief=1"
    opt_in = "*Sm90Onepass*:*DocumentsInTheKernels*:CudaElementWise.Tuned*"
    rest = f"stand-in test_cuda_device --gtest_filter=-CudaWgmma.*:CudaTma.*:{opt_in} --gtest_brief=1"
    last = f"stand-in test_cuda_device --gtest_filter={opt_in} --gtest_brief=1"
    assert probes in log and rest in log and last in log, log
    assert log.index(probes) < log.index(rest) < log.index(last), log

    run, _, _ = run_stage(tmp, "9.0", stage="kernels", log_name="ctest-kernels.log", tests_rc=1)
    assert run.returncode != 0 and "failed stages: kernels" in run.stdout, run.stdout + run.stderr

    # Skipped probes fail the stage on a Hopper GPU, not on another.
    skipped = "[  SKIPPED ] 2 tests, listed below:"
    run, _, log = run_stage(tmp, "9.0", stage="kernels", log_name="ctest-kernels.log", tests_say=skipped)
    assert run.returncode != 0 and "the Hopper probes were skipped" in log, run.stdout + log
    run, _, log = run_stage(tmp, "8.0", stage="kernels", log_name="ctest-kernels.log", tests_say=skipped)
    assert run.returncode == 0, run.stdout + log

    # The grid: per family, the deck at 4 ranks and local at 1 rank, then the count table.
    run, files, log = run_stage(tmp, "9.0", stage="grid", log_name="verify-grid.log")
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["verify-grid.log"], files
    for family in HOPPER_FAMILIES:
        assert f"| attention.kernels={family}: inputs/gpu-flash-grid.yaml, 4 ranks | 1 | 1 | 0 | ok |" in run.stdout
        assert f"| attention.kernels={family}: local, 1 rank | 1 | 1 | 0 | ok |" in run.stdout, run.stdout
    assert "stand-in mpiexec -n 4 " in log and "stand-in mpiexec -n 1 " in log, log
    run, _, _ = run_stage(tmp, "8.0", stage="grid", log_name="verify-grid.log")
    assert run.returncode == 0 and "sm90" not in run.stdout, run.stdout
    run, _, _ = run_stage(tmp, "9.0", stage="grid", log_name="verify-grid.log", invalid=True)
    assert run.returncode != 0 and "failed stages: grid" in run.stdout, run.stdout + run.stderr
    assert "INVALID [attention.kernels=sm80: inputs/gpu-flash-grid.yaml, 4 ranks] model.head_dim=64" in run.stdout
    assert "| grads/layer0/wq | 0.1 | 0.1 | 0.1 | 0.005 | NO |" in run.stdout, run.stdout

    # The layer: each family's results beside PyTorch's, with the ratios.
    run, files, log = run_stage(tmp, "9.0", stage="layer", log_name="bench-layer.log")
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["bench-layer.log"], files
    for family in HOPPER_FAMILIES:
        assert f"stand-in minictx run kernels={family}" in log, log
    # ... and the tuned layer kernels on the default family, then on the one-pass family,
    # rows of their own.
    assert "== run.layer_kernels=tuned\nstand-in minictx run kernels=\n" in log, log
    assert ("== attention.kernels=sm90-onepass with run.layer_kernels=tuned\n"
            "stand-in minictx run kernels=sm90-onepass\n") in log, log
    for run_label in ("sm80", "sm90", "tuned", "sm90-onepass+tuned"):
        assert f"| 16384 | {run_label} | 60.00 | 50.0 % | 5000 | 50.00 | 60.0 % | 4608 | 1.200 | 1.085 |" in log, log
        assert f"| 32768 | {run_label} | 160.00 | 50.0 % | 5000 | 128.00 | 68.0 % | 8192 | 1.250 | 0.610 |" in log, log
    # Packed documents: each family and its twin that masks them in the kernels, one table
    # of the counted pairs' TFLOPS beside none; a ratio under 0.8 fails the stage.
    run, files, log = run_stage(tmp, "9.0", stage="documents", log_name="documents.log")
    assert run.returncode != 0 and "failed stages: documents" in run.stdout, run.stdout + run.stderr
    assert files == ["documents.log"], files
    assert re.findall(r"^== attention.kernels=(\S+)$", log, re.M) == [
        "sm80", "sm80-documents", "sm90", "sm90-documents", "sm90-onepass"], log
    for family, tflops, ratio, holds in (("sm90", "200.0", "0.500", "no"), ("sm90-documents", "360.0", "0.900", "yes"),
                                          ("sm90-onepass", "200.0", "0.500", "no")):
        assert f"| {family} | 32768 | 64 documents | {tflops} | 400.0 | {ratio} | {holds} |" in log, log
    run, _, log = run_stage(tmp, "9.0", stage="documents", log_name="documents.log",
                            env_extra={"FAMILIES": "sm90"})
    assert re.findall(r"^== attention.kernels=(\S+)$", log, re.M) == ["sm90", "sm90-documents"], log

    # The layer's trace: the run with its timeline, the trace file and the phases beside
    # the projection's.
    run, files, log = run_stage(tmp, "9.0", stage="trace", log_name="trace-layer.log")
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["gpu-layer-trace.json", "trace-layer.log"], files
    assert "stand-in minictx run" in log and "| point | phase (per step) |" in log, log
    # NCCL on the GPU: the one-rank tests, the refusal of two ranks on one GPU and the
    # stalled operation, one row each.
    run, files, log = run_stage(tmp, "9.0", stage="nccl", log_name="nccl.log")
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["nccl.log"], files
    for row in ("| test_nccl_comm, one rank | 0 | ", "| two ranks on one GPU refused | 2 | ",
                "| a model step on NCCL (the layer stack's sub-group) | 0 | ",
                "| NCCL error ends the job | 2 | ", "| stalled NCCL operation ends the job | 2 | "):
        assert row in run.stdout and run.stdout.split(row)[1].split("\n")[0].endswith("| ok |"), run.stdout
    assert "stand-in test_nccl_comm --gtest_brief=1" in log, log
    assert re.search(r"stand-in mpiexec -n 2 \S+/minictx verify --set run.device=cuda --set run.comm=nccl ", log), log
    assert "stand-in minictx verify nccl fault=\n" in log, log
    assert re.search(r"stand-in mpiexec -n 1 \S+/minictx run --set run.device=cuda --set run.comm=nccl .*"
                     r"--set run.watchdog_seconds=5 ", log), log
    assert "stand-in minictx run nccl fault=0:stall" in log and "stand-in minictx run nccl fault=0:shift" in log, log
    # Each way a check can go wrong fails the stage and says why in its row.
    for kwargs, why in (({"nccl_rc": 3}, "exit 3, expected 2"), ({"nccl_lines": 2}, "got 2"),
                        ({"nccl_lines": 0}, "got 0"), ({"tests_rc": 1}, "exit 1, expected 0"),
                        ({"nccl_model_rc": 2}, "exit 2, expected 0")):
        run, _, _ = run_stage(tmp, "9.0", stage="nccl", log_name="nccl.log", **kwargs)
        assert run.returncode != 0 and "failed stages: nccl" in run.stdout, (kwargs, run.stdout)
        assert why in run.stdout, (kwargs, run.stdout)

    # Refused at once, nothing run: no packages where they still have to be unpacked.
    run, files, _ = run_stage(tmp, "9.0", stage="build kernels", log_name="ctest-kernels.log", unpacked=False)
    assert run.returncode == 2 and files == [], (run.stdout, files)
    assert "gpu-check: error: no packages in " in run.stdout and "ci/fetch-gpu-debs.sh" in run.stdout, run.stdout
    assert not os.path.exists(os.path.join(tmp, "nvidia-smi.calls")), "a stage ran before the refusal"
    debs = os.path.join(tmp, "debs")
    os.makedirs(debs, exist_ok=True)
    with open(os.path.join(debs, "packages.txt"), "w") as f:
        f.write("mpich\nlibhdf5-dev\n")
    open(os.path.join(debs, "mpich_4.0.2-3_amd64.deb"), "w").close()
    run, files, _ = run_stage(tmp, "9.0", stage="kernels", log_name="ctest-kernels.log", env_extra={"DEBS": debs},
                              unpacked=False)
    assert run.returncode == 2 and files == [], (run.stdout, files)
    assert "lacks 1 of the packages its packages.txt lists (libhdf5-dev)" in run.stdout, run.stdout
    # An unknown stage and a family this GPU does not run are refused before any stage.
    run, files, _ = run_stage(tmp, "9.0", stage="kernels nonsense")
    assert run.returncode == 2 and files == [] and "unknown stage 'nonsense'" in run.stdout, run.stdout
    run, files, _ = run_stage(tmp, "8.0", stage="layer", env_extra={"FAMILIES": "sm90"})
    assert run.returncode == 2 and files == [], run.stdout
    assert "FAMILIES names 'sm90', which this GPU does not run (it runs: sm80)" in run.stdout, run.stdout

    # FAMILIES: the families named, or auto's alone (the one-pass family with the tuned
    # layer kernels only where it is named).
    for families, want, combined in (("sm90", ["sm90"], 0), ("auto", ["sm90"], 0),
                                     ("sm80,sm90", ["sm80", "sm90"], 0), ("sm90-onepass", ["sm90-onepass"], 1)):
        run, _, log = run_stage(tmp, "9.0", stage="layer", log_name="bench-layer.log",
                                env_extra={"FAMILIES": families})
        assert run.returncode == 0, run.stdout + run.stderr
        assert re.findall(r"^== attention.kernels=(sm[\w-]+)$", log, re.M) == want, (families, log)
        assert log.count("with run.layer_kernels=tuned") == combined, (families, log)
    run, _, log = run_stage(tmp, "8.0", stage="layer", log_name="bench-layer.log", env_extra={"FAMILIES": "auto"})
    assert re.findall(r"stand-in minictx run kernels=(sm[\w-]+)", log) == ["sm80"], log
    # The layer's phases per step: the slowest rank's sum over the 3 timed steps, divided.
    run, _, log = run_stage(tmp, "9.0", stage="layer", log_name="bench-layer.log", env_extra={"FAMILIES": "sm90"})
    assert ("| S | run | step (ms) | forward | attention fwd | GEMMs fwd | other fwd | backward | attention bwd "
            "| GEMMs bwd | other bwd ") in log, log
    assert "| 16384 | sm90 | 60.00 | 20.00 | 5.00 | 10.00 | 5.00 | 40.00 | 15.00 | 18.00 | 6.00 | 0.00 | 1.00 |" in log, log
    assert "| 32768 | sm90 | 160.00 | 40.00 | 10.00 | 20.00 | 10.00 | 80.00 | 30.00 | 36.00 | 12.00 | 0.00 | 2.00 |" in log, log

    # test: the gpu suite but the kernel tests; skipped gpu tests fail it where a GPU is listed.
    run, files, log = run_stage(tmp, "9.0", stage="test", log_name="ctest-gpu.log")
    assert run.returncode == 0 and files == ["ctest-gpu.log"], run.stdout + run.stderr
    assert "-L ^gpu$ -E (^|/)Cuda[A-Za-z0-9]*[.] " in log and "1: | flash_fwd_kernel<64, 4, 64, 2, true>" in log, log
    run, _, log = run_stage(tmp, "9.0", stage="test", log_name="ctest-gpu.log", skipped=True)
    assert run.returncode != 0 and "failed stages: test" in run.stdout, run.stdout
    assert ("gpu-check: test: 2 gpu tests were skipped on a machine whose nvidia-smi lists a GPU: CUDA did not "
            "start for minictx; verify_cuda_p1_gpu says: minictx: error: rank 0: device cuda: no usable GPU "
            "(cudaGetDeviceCount: CUDA driver version is insufficient") in log, log
    run, _, _ = run_stage(tmp, "9.0", stage="test", log_name="ctest-gpu.log", skipped=True, listed=False)
    assert run.returncode == 0, run.stdout

    # tiny, then tiny-report in a later command: the verification outlives the first.
    run, files, log = run_stage(tmp, "9.0", stage="tiny", log_name="tiny.log")
    assert run.returncode == 0 and files == ["tiny.log"], run.stdout + run.stderr
    assert "FOM class=tiny backend=local tokens/s/device=3000.0" in log, log
    assert re.search(r"stand-in mpiexec -n 1 \S+/minictx run inputs/benchmark/tiny.yaml "
                     r"--set machine.profile=h100-80gb -o \S+/tiny.h5", log), log
    run, files, log = run_stage(tmp, "9.0", stage="tiny-report", log_name="tiny-report.log",
                                env_extra={"TIME_LIMIT": "60"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["tiny-report.log", "tiny-verify.h5", "tiny.h5"], files
    assert "VERIFICATION class=tiny backend=local seq=1024 VALID" in log and "| tiny | 3000.0 | VALID | compliant |" in log
    assert re.search(r"stand-in report report --submission \S+/tiny.h5 \S+/tiny-verify.h5", log), log
    shutil.rmtree(os.path.join(tmp, "tiny"))
    run, _, log = run_stage(tmp, "9.0", stage="tiny-report", log_name="tiny-report.log")
    assert run.returncode != 0 and "no tiny run on this machine" in log, log

    # gradsums: the check gets the unpacked mpiexec, the cuda build's minictx and the cuda
    # device; its output is kept, and its failure fails the stage.
    run, files, log = run_stage(tmp, "9.0", stage="gradsums", log_name="grad-sums.log")
    assert run.returncode == 0 and files == ["grad-sums.log"], run.stdout + run.stderr
    assert (f"stand-in grad sums check {tmp}/deps/usr/bin/mpiexec.hydra {tmp}/build/miniapp/minictx "
            "--set run.device=cuda\ngradient sums ok") in log, log
    run, _, log = run_stage(tmp, "9.0", stage="gradsums", log_name="grad-sums.log", grad_sums_rc=1)
    assert run.returncode != 0 and "failed stages: gradsums" in run.stdout and "GRADIENT SUMS FAILED" in log, log

    # The two commands of docs/nvidia.md, in turn on one machine, as documented.
    with open(os.path.join(source, "docs", "nvidia.md")) as f:
        doc = f.read()
    calls = re.findall(r"^(TIME_LIMIT=(\d+) .*ci/gpu-check\.sh .*)$", doc, flags=re.M)
    start = re.search(r"allowing (\d+) s for the machine's start", doc)
    assert len(calls) == 2 and start, calls
    assert all(int(limit) <= 600 for _, limit in calls), calls
    assert int(start.group(1)) + sum(int(limit) for _, limit in calls) <= 900, (start.group(1), calls)
    for command, _ in calls:
        assert "carry" not in command and ".gpu-debs" in doc, command
        run, files, _ = run_stage(tmp, "9.0", stage=command, fresh=False)
        assert run.returncode == 0, (command, run.stdout + run.stderr)
        assert len(files) + 1 <= 8, (command, files)
        assert "failed stages" not in run.stdout and "unknown stage" not in run.stdout, run.stdout
print("gpu-check stages ok")
