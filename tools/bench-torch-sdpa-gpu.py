#!/usr/bin/env python3
"""PyTorch scaled_dot_product_attention throughput on the grid of `minictx bench --device cuda`.

The same shapes (batch 1, H heads = kv heads, S × mask × head dim, forward and
forward+backward), the same dtype, and FLOPs counted as minictx does (model/flops.cpp):
forward 4·B·S²·H·D, halved when causal; forward+backward 3.5 times that. Every SDPA
backend asked for is timed on every shape it accepts and printed on a row of its own
(tools/compare-attention-gpu.py puts them beside minictx's); a backend that refuses a shape
says why on stderr. Timing as `minictx bench --device cuda` times its rows
(bench/device_bench.cpp): one untimed call, then each call on the host clock from an idle
GPU to an idle GPU, the best of at least `--min-reps` calls and until `--min-seconds`
were spent.

Prints CSV: seq_len,causal,head_dim,pass,backend,ms,tflops
"""
import argparse
import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def flops(s, heads, d, causal, backward):
    f = 4.0 * s * s * heads * d * (0.5 if causal else 1.0)
    return 3.5 * f if backward else f


def best_ms(fn, min_reps, min_seconds):
    fn()
    torch.cuda.synchronize()
    best, spent, reps = float("inf"), 0.0, 0
    while reps < min_reps or spent < min_seconds:
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        t = time.perf_counter() - t0
        best, spent, reps = min(best, t), spent + t, reps + 1
    return best * 1e3


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def masks(text):
    if text not in ("causal", "full", "both"):
        raise argparse.ArgumentTypeError(f"--mask must be causal, full or both, not '{text}'")
    return {"causal": [True], "full": [False], "both": [True, False]}[text]


def backends(text):
    names = [x for x in text.split(",") if x]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown backend {unknown}: one of {','.join(BACKENDS)}")
    return names


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seq", "--lengths", dest="seq", type=int_list, default=int_list("4096,16384,32768,65536"),
                   help="sequence lengths S (as minictx bench --seq)")
    p.add_argument("--head-dims", "--head-dim", dest="head_dims", type=int_list, default=int_list("64,128"),
                   help="head dims D (as minictx bench --head-dim)")
    p.add_argument("--mask", type=masks, default=masks("both"), help="causal | full | both")
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--dtype", choices=DTYPES, default="bf16")
    p.add_argument("--backends", type=backends, default=backends("flash,cudnn,efficient"),
                   help="SDPA backends to time, each on its own rows (math materialises S×S: small S only)")
    p.add_argument("--min-reps", type=int, default=3, help="timed calls at least (as minictx bench)")
    p.add_argument("--min-seconds", type=float, default=1.0, help="timed seconds at least (as minictx bench)")
    a = p.parse_args()
    dtype = DTYPES[a.dtype]
    print("seq_len,causal,head_dim,pass,backend,ms,tflops", flush=True)
    for d in a.head_dims:
        for s in a.seq:
            shape = (1, a.heads, s, d)
            q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
            dout = torch.randn(shape, device="cuda", dtype=dtype)
            for causal in a.mask:
                for backward in (False, True):
                    for name in a.backends:
                        def step(backend=BACKENDS[name]):
                            for t in (q, k, v):  # a fresh gradient each call, not a sum over calls
                                t.grad = None
                            with sdpa_kernel(backend):
                                o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                if backward:
                                    o.backward(dout)
                        try:
                            ms = best_ms(step, a.min_reps, a.min_seconds)
                        except RuntimeError as e:  # this backend refuses the shape (or runs out of memory)
                            print(f"# {name} s={s} d={d} causal={causal}: {str(e).splitlines()[0]}",
                                  file=sys.stderr)
                            torch.cuda.empty_cache()
                            continue
                        finally:
                            for t in (q, k, v):
                                t.grad = None
                        tf = flops(s, a.heads, d, causal, backward) / (ms * 1e-3) / 1e12
                        print(f"{s},{causal},{d},{'fwd+bwd' if backward else 'fwd'},{name},{ms:.3f},{tf:.1f}",
                              flush=True)
            del q, k, v, dout
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
