"""Test cases run as the points of one sweep (one launch instead of one per case).

A case is a dict of the swept keys it sets; sweep_args() zips them into `--set key=[...]`
lists in which the cases that leave a key out take its default, which every backend
accepts even for an option it does not read (inputs/README.md, "Sweeps")."""
import re

# The defaults (miniapp/config/run_config.hpp) of the keys the checks sweep.
DEFAULTS = {"attention.ring_type": "basic", "attention.window_size": "0", "attention.intra": "ring",
            "attention.bwd_comm": "q", "attention.ulysses_degree": "1", "run.grad_reduce_dtype": "fp32",
            "model.vocab": "0", "run.loss_chunk": "0"}


def sweep_args(cases):
    """The --set arguments that make `cases` the points of one sweep, in order."""
    keys = list(dict.fromkeys(k for case in cases for k in case))
    args = []
    for k in keys:
        args += ["--set", f"{k}=[{','.join(case.get(k, DEFAULTS.get(k, '')) for case in cases)}]"]
    return args + (["--set", f"sweep.zip=[{','.join(keys)}]"] if len(keys) > 1 else [])


def dry_run_estimates(text):
    """Each point's memory estimate (MiB) from `minictx run --dry-run`'s output."""
    return [int(e) for e in re.findall(r"^point_\d+ .*: runs, memory estimate (\d+) MiB", text, re.M)]
