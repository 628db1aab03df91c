#!/usr/bin/env python3
"""ci/gpu-check.sh's gradsums stage on a machine without a GPU, against a stand-in check
(GRAD_SUMS_CHECK) that prints the arguments it was given and passes or fails: the stage
hands it the unpacked mpiexec, the cuda build's minictx and `--set run.device=cuda`, keeps
its output in grad-sums.log, and fails when the check fails.

  check_gpu_grad_sums_stage.py SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

source = sys.argv[1]


def run_stage(tmp, check_rc):
    out, build, prefix = (os.path.join(tmp, d) for d in ("out", "build", "deps"))
    os.makedirs(out, exist_ok=True)
    check = os.path.join(tmp, "check.py")
    with open(check, "w") as f:
        f.write(f"import sys\nprint('stand-in check', *sys.argv[1:])\n"
                f"print('gradient sums ok' if {check_rc} == 0 else 'GRADIENT SUMS FAILED')\nsys.exit({check_rc})\n")
    env = dict(os.environ, OUT=out, BUILD_DIR=build, DEPS_PREFIX=prefix,
               GRAD_SUMS_CHECK=f"{sys.executable} {check}")
    run = subprocess.run(["bash", os.path.join(source, "ci", "gpu-check.sh"), "gradsums"], capture_output=True,
                         text=True, env=env, cwd=source)
    log_path = os.path.join(out, "grad-sums.log")
    return run, sorted(os.listdir(out)), open(log_path).read() if os.path.exists(log_path) else ""


with tempfile.TemporaryDirectory() as tmp:
    run, files, log = run_stage(tmp, 0)
    assert run.returncode == 0, run.stdout + run.stderr
    assert files == ["grad-sums.log"], files
    prefix, build = os.path.join(tmp, "deps"), os.path.join(tmp, "build")
    assert (f"stand-in check {prefix}/usr/bin/mpiexec.hydra {build}/miniapp/minictx --set run.device=cuda\n"
            "gradient sums ok") in log, log
    assert "gpu-check: stage gradsums took" in run.stdout, run.stdout
    run, _, log = run_stage(tmp, 1)
    assert run.returncode != 0 and "failed stages: gradsums" in run.stdout, run.stdout + run.stderr
    assert "GRADIENT SUMS FAILED" in log, log
print("gpu-check gradsums stage ok")
