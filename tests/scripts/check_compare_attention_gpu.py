#!/usr/bin/env python3
"""tools/compare-attention-gpu.py on fixtures shaped like its two inputs: a `minictx bench
--device cuda` log (progress lines, the table, the calibration line) and the SDPA CSV
(one row per backend, notes on '#' lines, a shape cuDNN refused). Checks the joined rows,
the ratios, the '-' of what one side did not measure, the CSV form, and the table of
several labelled logs (one per kernel family), which need distinct labels."""
import os
import subprocess
import sys
import tempfile

script = sys.argv[1]

MINICTX = """minictx bench on CUDA GPU 0 of 1: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)
gemm_bf16    8192^3      2.000 ms    550.0 TFLOPS
attn_fwd     S=4096   D=128 causal=1      1.000 ms    137.4 TFLOPS   25.0 % of the GEMM

| S | mask | D | pass | time (ms) | TFLOPS | of GEMM |
|---|---|---|---|---|---|---|
| 4096 | causal | 128 | fwd | 1.000 | 200.0 | 0.364 |
| 4096 | causal | 128 | fwd+bwd | 4.000 | 175.0 | 0.318 |
| 16384 | full | 64 | fwd | 10.0 | 300.0 | 0.545 |

calibration: bf16 GEMM 8192^3 through the device (cuBLASLt on cuda, fp32 operands converted per call): 550.0 TFLOPS \
at the start, 548.0 TFLOPS at the end
results: out.h5
"""

SDPA = """/usr/lib/python3/torch/backends/__init__.py:46: UserWarning: printed before the header
seq_len,causal,head_dim,pass,backend,ms,tflops
4096,True,128,fwd,flash,0.500,400.0
4096,True,128,fwd,cudnn,0.250,500.0
4096,True,128,fwd,efficient,0.800,250.0
4096,True,128,fwd+bwd,flash,2.000,350.0
# cudnn s=4096 d=128 causal=True: No available kernel
4096,True,128,fwd+bwd,efficient,3.000,233.3
16384,False,64,fwd,flash,1.0,600.0
16384,False,64,fwd,cudnn,1.0,600.0
65536,False,128,fwd,flash,1.0,320.0
/usr/lib/python3/torch/nn/functional.py:5504: UserWarning: a warning, with commas, in the same stream
"""

with tempfile.TemporaryDirectory() as tmp:
    log, sdpa = os.path.join(tmp, "minictx.log"), os.path.join(tmp, "sdpa.csv")
    with open(log, "w") as f:
        f.write(MINICTX)
    with open(sdpa, "w") as f:
        f.write(SDPA)
    run = subprocess.run([sys.executable, script, log, sdpa], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == ("| S | mask | D | pass | minictx TFLOPS | of GEMM | SDPA flash | SDPA cudnn | SDPA efficient "
                        "| minictx / FA2 | minictx / cuDNN |"), lines[0]
    body = [line for line in lines[2:] if line.startswith("|")]
    assert body == [
        "| 4096 | causal | 128 | fwd | 200.0 | 0.364 | 400.0 | 500.0 | 250.0 | 0.500 | 0.400 |",
        "| 4096 | causal | 128 | fwd+bwd | 175.0 | 0.318 | 350.0 | - | 233.3 | 0.500 | - |",
        "| 16384 | full | 64 | fwd | 300.0 | 0.545 | 600.0 | 600.0 | - | 0.500 | 0.500 |",
        "| 65536 | full | 128 | fwd | - | - | 320.0 | - | - | - | - |",
    ], "\n".join(body)
    assert "bf16 GEMM 8192^3 at 550.0 TFLOPS" in run.stdout, run.stdout

    as_csv = subprocess.run([sys.executable, script, log, sdpa, "--format", "csv"], capture_output=True, text=True)
    assert as_csv.returncode == 0, as_csv.stderr
    assert as_csv.stdout.splitlines()[1] == "4096,causal,128,fwd,200.0,0.364,400.0,500.0,250.0,0.500,0.400"

    # Two families: the second log measured one shape the first did not, and its own calibration.
    other = os.path.join(tmp, "wgmma.log")
    with open(other, "w") as f:
        f.write(MINICTX.replace("| 4096 | causal | 128 | fwd | 1.000 | 200.0 | 0.364 |",
                                "| 4096 | causal | 128 | fwd | 0.500 | 400.0 | 0.727 |")
                .replace("| 16384 | full | 64 | fwd | 10.0 | 300.0 | 0.545 |",
                         "| 65536 | full | 128 | fwd | 1.0 | 480.0 | 0.873 |")
                .replace("550.0 TFLOPS", "560.0 TFLOPS"))
    both = subprocess.run([sys.executable, script, f"mma={log}", f"wgmma={other}", sdpa],
                          capture_output=True, text=True)
    assert both.returncode == 0, both.stdout + both.stderr
    lines = both.stdout.splitlines()
    assert lines[0] == ("| S | mask | D | pass | mma TFLOPS | wgmma TFLOPS | SDPA flash | SDPA cudnn | SDPA efficient "
                        "| mma / FA2 | mma / cuDNN | wgmma / FA2 | wgmma / cuDNN |"), lines[0]
    body = [line for line in lines[2:] if line.startswith("|")]
    assert body == [
        "| 4096 | causal | 128 | fwd | 200.0 | 400.0 | 400.0 | 500.0 | 250.0 | 0.500 | 0.400 | 1.000 | 0.800 |",
        "| 4096 | causal | 128 | fwd+bwd | 175.0 | 175.0 | 350.0 | - | 233.3 | 0.500 | - | 0.500 | - |",
        "| 16384 | full | 64 | fwd | 300.0 | - | 600.0 | 600.0 | - | 0.500 | 0.500 | - | - |",
        "| 65536 | full | 128 | fwd | - | 480.0 | 320.0 | - | - | - | - | 1.500 | - |",
    ], "\n".join(body)
    assert "mma: bf16 GEMM 8192^3 at 550.0 TFLOPS; wgmma: bf16 GEMM 8192^3 at 560.0 TFLOPS" in both.stdout, both.stdout
    for specs in ([log, other], [f"a={log}", f"a={other}"]):
        clash = subprocess.run([sys.executable, script, *specs, sdpa], capture_output=True, text=True)
        assert clash.returncode == 2 and "distinct labels" in clash.stderr, clash.stdout + clash.stderr

    empty = os.path.join(tmp, "empty")
    open(empty, "w").close()
    none = subprocess.run([sys.executable, script, empty, empty], capture_output=True, text=True)
    assert none.returncode == 1 and "no rows" in none.stderr, none.stdout + none.stderr
print("compare attention ok")
