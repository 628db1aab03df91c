#pragma once
// The exit status for batch scripts: a launcher may report 0 for ranks that exited 143
// (mpiexec forwarding a SIGTERM it got itself), so with MINICTX_STATUS_FILE set, minictx
// writes its own status there as it ends: one line, the exit code. A job script decides
// from that file; a missing file means the ranks died before they could write it.
namespace minictx {

// Writes `code` to $MINICTX_STATUS_FILE (if set), replacing it atomically. Called by rank
// 0 at the end, or by the rank that aborts the job. Never throws; a failure to write is
// one warning.
void record_exit_status(int code);

}  // namespace minictx
