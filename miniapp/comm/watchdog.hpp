#pragma once
#include <functional>
#include <string>

#include "core/error.hpp"

// The limit on how long a rank may wait in one communication call before it aborts the
// job (DESIGN: "a watchdog turns a stuck collective into an abort that says which rank
// waited on what"), and the one loop every transport waits in: MPI's requests, NCCL's
// events and asynchronous errors. Process-wide, like the signal handlers: the comm layer
// sits below the point being run, and the backends between them must not carry it.
namespace minictx::watchdog {

// run.watchdog_seconds: > 0 a fixed limit, 0 off, -1 automatic (ten times the slowest
// step completed so far, at least kMinAutomaticSeconds).
void configure(double seconds);
// Names the point being run in the abort line.
void set_point(const std::string& what);
// A training or attention step of `seconds` finished (raises the automatic limit).
void step_completed(double seconds);

// The limit now, in seconds; 0 = off.
double limit_seconds();
// "run.watchdog_seconds = 5" or how the automatic limit came about.
std::string limit_description();
const std::string& point();

constexpr double kMinAutomaticSeconds = 300;

// Every rank's exit status when minictx ends a job on a failure it reported in one line,
// whether the ranks agreed on it or one rank aborted the job.
constexpr int kFailedJobStatus = 2;

// `record` gets the exit status of a rank about to abort the job (the application writes
// it where job scripts read it).
void on_abort(void (*record)(int status));
// Ends the job from this rank: `line` on stderr, the status recorded, MPI_Abort.
[[noreturn]] void abort_job(const std::string& line);

// One wait on a transport. `done` polls the operation; `fault` returns the error the
// transport found meanwhile ("" while none: NCCL's asynchronous error, the test seam's);
// `abandon` (may be empty) gives the transport's pending work up before the job ends
// (ncclCommAbort), so that nothing blocks on it.
struct Watch {
  std::string call;  // "MPI_Waitall of a ring shift", "ncclAllGather"
  // "send to rank 1, receive from rank 1", "group of 4 ranks (0,1,2,3)": written only
  // for a line, not on every wait.
  std::function<std::string()> peers;
  std::function<bool()> done;
  std::function<std::string()> fault;
  std::function<void()> abandon;
  // More ranks on this node than it has cores (an emulated cluster): a rank that only
  // yields still takes most of a core from the ranks it waits for, so long waits sleep.
  bool oversubscribed = false;
};

// Polls `w` until done, yielding the core on long waits (sleeping when oversubscribed). On a fault, or past
// the limit, one line naming this rank, the call, its peers and the point, and the job is aborted.
void wait(const Watch& w);
// The fault path of wait, for a transport that finds its error when it issues a call:
// "minictx: error: rank R: <fault> in <call> (<peers>) at <point>; aborting the job".
[[noreturn]] void abort_on_fault(const Watch& w, const std::string& fault);

// Thrown by wait_to_start past the limit: this rank waited for ranks that failed (and
// said so in their own error) or never came.
class WaitedForOthers : public Error {
 public:
  using Error::Error;
};

// The same inside an agreed start-up step (app/agree.hpp), where the ranks still share
// their failures: a fault throws Error naming this rank, the limit WaitedForOthers.
void wait_to_start(const Watch& w);

}  // namespace minictx::watchdog
