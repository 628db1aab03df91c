"""The Python the tools need: Debian's /usr/bin/python3 holds h5py, numpy and matplotlib
(ci/setup-deps.sh installs them), but another python3 may come first on the PATH (a
virtual environment, a module system's Python). require() runs the calling tool again
under /usr/bin/python3 when the interpreter that started it lacks a module, and stops
with one line naming the missing modules when that one lacks them too."""
import importlib.util
import os
import sys

SYSTEM_PYTHON = "/usr/bin/python3"


def require(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    if os.access(SYSTEM_PYTHON, os.X_OK) and os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON):
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, *sys.argv])
    tool = os.path.basename(sys.argv[0])
    sys.exit(f"{tool}: error: {sys.executable} has no {', '.join(missing)} (Debian: apt install "
             + " ".join(f"python3-{m}" for m in missing) + ", as ci/setup-deps.sh does)")
