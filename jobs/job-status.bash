# Sourced by jobs/minictx.sbatch and jobs/minictx.pbs. A job's exit code is minictx's own,
# which rank 0 writes to $MINICTX_STATUS_FILE as it ends, not the launcher's: a launcher
# can exit 0 for ranks that a SIGTERM stopped.

# Makes the status file's folder and writes the file once before the ranks start: a job
# whose status cannot be recorded is refused at once (exit 2, with the reason), not
# reported at its end as killed. $1: the script's name for the message.
prepare_status_file() {
  local reason
  mkdir -p -- "$(dirname -- "$MINICTX_STATUS_FILE")" 2>/dev/null || true  # the write below says why not
  if ! reason=$({ : > "$MINICTX_STATUS_FILE"; } 2>&1); then
    echo "$1: MINICTX_STATUS_FILE=$MINICTX_STATUS_FILE cannot be written: ${reason##*: }" >&2
    exit 2
  fi
  rm -f -- "$MINICTX_STATUS_FILE"
}

# Runs the launcher "$@" in the foreground and sets launcher_status to its exit code. The
# batch system signals the ranks itself (Slurm's --signal and scancel, PBS at the
# walltime): the signal is only noted here, and this shell waits for the launcher (bash
# runs a trap once its foreground command ends) instead of dying before the ranks have
# written their status. Passing it on would deliver a second SIGTERM, which stops a rank
# at once instead of between iterations. $1: the script's name for the message.
launch_and_wait() {
  local name=$1
  shift
  trap 'echo "'"$name"': signal received; waiting for the ranks to stop" >&2' TERM INT HUP
  launcher_status=0
  "$@" || launcher_status=$?
  trap - TERM INT HUP
}

# Prints the job's final line and exits with minictx's status. Without a status file the
# ranks ended before rank 0 could write it (SIGKILL, a node failure, an abort on another
# rank): the launcher's code, or 1 when the launcher says 0. $1: the script's name, $2:
# the launcher's name.
exit_with_minictx_status() {
  local status
  if [[ -s $MINICTX_STATUS_FILE ]]; then
    status=$(<"$MINICTX_STATUS_FILE")
  else
    echo "$1: no exit status from minictx in $MINICTX_STATUS_FILE: the ranks ended before rank 0 could" \
         "write it ($2 exit $launcher_status)" >&2
    status=$((launcher_status ? launcher_status : 1))
  fi
  echo "minictx exit status: $status ($2: $launcher_status)"
  exit "$status"
}
