#!/usr/bin/env bash
# One GPU per rank: runs "$@" with CUDA_VISIBLE_DEVICES narrowed to this rank's GPU when
# the batch system made several visible to every rank of a node (--gpus-per-node, PBS
# ngpus). With --gpus-per-task=1 Slurm already binds one, which is kept; without GPUs
# nothing changes. The node-local rank comes from Slurm, MPICH (hydra) or Open MPI.
set -euo pipefail
local_rank=${SLURM_LOCALID:-${MPI_LOCALRANKID:-${OMPI_COMM_WORLD_LOCAL_RANK:-0}}}
IFS=, read -ra gpus <<< "${CUDA_VISIBLE_DEVICES:-}"
if [ "${#gpus[@]}" -gt 1 ]; then
  export CUDA_VISIBLE_DEVICES=${gpus[$((local_rank % ${#gpus[@]}))]}
fi
exec "$@"
