# Sourced by the tools that start long-running children (mpiexec, minictx, builds):
# `forward CMD...` runs CMD and returns its exit status, passing on to it a SIGTERM,
# SIGINT or SIGHUP this shell gets, and waiting for it to end. Without it, a tool stopped
# with `kill` exits at once and leaves mpiexec and its ranks running, orphaned. CMD runs in
# a process group of its own, so a terminal's Ctrl-C reaches the tool alone and CMD gets
# the signal once, from here (a second SIGTERM stops minictx at once instead of between
# iterations). Under `set -e` the tool then exits with CMD's status (143 after SIGTERM), or
# with 128 + the signal where CMD reports success all the same (MPICH's mpiexec does, once
# it has passed a SIGTERM on to ranks that end by it): a tool asked to stop never goes on.
forward() {
  set -m
  "$@" &
  _forward_child=$!
  set +m
  local signal
  for signal in TERM INT HUP; do
    # shellcheck disable=SC2064  # the signal's name is fixed now; the child is read when it comes
    trap "_forward_signalled=1 _forward_signal=$signal; kill -$signal \"\$_forward_child\" 2>/dev/null || true" "$signal"
  done
  local status
  _forward_signal=
  while :; do
    _forward_signalled=0
    wait "$_forward_child" && status=0 || status=$?
    # A trapped signal ends `wait` early while CMD runs on: wait again for its own status.
    [[ $_forward_signalled == 1 ]] || break
  done
  trap - TERM INT HUP
  [[ $status != 0 || -z $_forward_signal ]] || status=$((128 + $(kill -l "$_forward_signal")))
  return "$status"
}
