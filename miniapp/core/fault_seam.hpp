#pragma once
#include <string>

// The test seam of the start-up and failure paths (docs/testing.md, "Fault injection"):
// MINICTX_INJECT_FAULT=RANK:STAGE[:POINT] makes one rank fail at one stage, as a GPU,
// NCCL or a network would, so that the tests can show every rank ending together with
// one line; two stages hand verify a wrong loss (a loss of 0; the LM head's wrong label),
// so that a test can show it refused. Unset (every production run), no stage fires.
// Process-wide, like the watchdog: the stages sit in the device, comm, model and verify
// layers, below the point being run.
namespace minictx::fault_seam {

enum class Stage {
  gpu,          // creating the device (a GPU that cannot be used, out of memory)
  comm,         // the world comm's start on every rank (ncclCommInitRank; a barrier on MPI)
  shift,        // the first ring shift of point POINT reports an error, as NCCL's asynchronous error
                // comes (with NCCL: the first operation waited for, a shift or a collective)
  stall,        // the first NCCL operation of point POINT waits behind a kernel that never ends
  zero_loss,    // verify compares a loss of 0 in place of the run's (model mode): the check must fail
  wrong_label,  // the LM head's first label on this rank is the next class (model.vocab)
};

// Reads MINICTX_INJECT_FAULT for this world rank; InputError when it is malformed.
void arm(int world_rank);
// The run moves on to the sweep's point `index` (0-based).
void set_point(int index);
// Whether `stage` fails on this rank now.
bool fires(Stage stage);
// "<what> (injected by MINICTX_INJECT_FAULT)": the reason a line gives.
std::string injected(const std::string& what);
// Throws Error "rank R: <what> (injected by MINICTX_INJECT_FAULT)".
[[noreturn]] void fail_here(const std::string& what);

}  // namespace minictx::fault_seam
