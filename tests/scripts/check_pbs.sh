#!/usr/bin/env bash
# jobs/minictx.pbs as PBS would run it, without a PBS server: the job environment PBS sets
# (PBS_NODEFILE with one line per rank, PBS_JOBID, PBS_O_WORKDIR) and the script run by
# bash, so its hostfile, rank count and mpiexec line run for real on 2 ranks, with the
# launcher the build tests with (MPICH's or Open MPI's hostfile form). The status file's
# folder does not exist yet: the script makes it. A status file that cannot be written
# refuses the job before it starts.
#   check_pbs.sh MINICTX SOURCE_DIR [MPIEXEC]
set -euo pipefail
minictx=$1 source=$2 mpiexec=${3:-mpiexec}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
host=$(hostname)
printf '%s\n%s\n' "$host" "$host" > "$tmp/nodefile"
env PBS_NODEFILE="$tmp/nodefile" PBS_JOBID=4242.pbs-test PBS_O_WORKDIR="$tmp" MINICTX="$minictx" MINICTX_MPIEXEC="$mpiexec" \
    MINICTX_ROOT="$source" MINICTX_DECK="$source/inputs/quickstart.yaml" MINICTX_STATUS_FILE="$tmp/new/folder/job.status" \
    MINICTX_ARGS="--set attention.backend=ring --set sequence.length=256 --set run.iters=1 -o $tmp/pbs.h5" \
    bash "$source/jobs/minictx.pbs" | tee "$tmp/out"
grep -q "minictx job 4242.pbs-test: 2 ranks on 1 node(s) ($host)" "$tmp/out"
grep -q "minictx exit status: 0 (mpiexec: 0)" "$tmp/out"
[[ $(<"$tmp/new/folder/job.status") == 0 ]]
code=0
env PBS_NODEFILE="$tmp/nodefile" PBS_JOBID=4244.pbs-test PBS_O_WORKDIR="$tmp" MINICTX="$minictx" MINICTX_MPIEXEC="$mpiexec" \
    MINICTX_ROOT="$source" MINICTX_DECK="$source/inputs/quickstart.yaml" MINICTX_STATUS_FILE="$tmp/nodefile/job.status" \
    bash "$source/jobs/minictx.pbs" > "$tmp/out3" 2>&1 || code=$?
cat "$tmp/out3"
[[ $code == 2 ]] && grep -q "^minictx.pbs: MINICTX_STATUS_FILE=$tmp/nodefile/job.status cannot be written: Not a directory$" "$tmp/out3"
! grep -q "minictx exit status" "$tmp/out3"
# The job's exit code is minictx's status, not the launcher's: a launcher that reports 0
# for ranks that failed (here: the output exists) still fails the job, with their code.
printf '#!/bin/sh\n"%s" "$@"\nexit 0\n' "$mpiexec" > "$tmp/lenient-mpiexec"
chmod +x "$tmp/lenient-mpiexec"
code=0
env PBS_NODEFILE="$tmp/nodefile" PBS_JOBID=4243.pbs-test PBS_O_WORKDIR="$tmp" MINICTX="$minictx" \
    MINICTX_MPIEXEC="$tmp/lenient-mpiexec" MINICTX_ROOT="$source" MINICTX_DECK="$source/inputs/quickstart.yaml" \
    MINICTX_ARGS="--set attention.backend=ring --set sequence.length=256 --set run.iters=1 -o $tmp/pbs.h5" \
    bash "$source/jobs/minictx.pbs" > "$tmp/out2" 2>&1 || code=$?
cat "$tmp/out2"
[[ $code == 2 ]] && grep -q "minictx exit status: 2 (mpiexec: 0)" "$tmp/out2"
[[ -s $tmp/minictx-4243.pbs-test.status ]]
/usr/bin/python3 - "$tmp/pbs.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    prov = f["provenance"].attrs
    assert prov["env.PBS_JOBID"] == "4242.pbs-test", dict(prov)
    assert prov["world_size"] == 2, prov["world_size"]
    assert list(f["points"]) == ["point_0000"]
PY
echo "pbs ok"
