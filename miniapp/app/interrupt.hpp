#pragma once
// Stopping a run cleanly when the batch system's time limit (SIGTERM) or a user's Ctrl-C
// (SIGINT) arrives: the handler only records the signal; the run loop asks, at points
// every rank reaches together, whether any rank got one, and unwinds.
#include <string>

#include "core/error.hpp"

namespace minictx {

// Thrown (on every rank alike) when the ranks agreed to stop; signal = the one received.
class Interrupted : public Error {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

// Installs the SIGTERM and SIGINT handlers. A second signal of the same kind takes the
// default action, so a user can still force the exit.
void install_interrupt_handlers();

// Collective over MPI_COMM_WORLD: throws Interrupted on every rank if any rank received a
// signal. Cheap (one integer all-reduce); call it between points and iterations.
void stop_if_interrupted();

// "SIGTERM", "SIGINT", or "signal N".
std::string signal_name(int signal);

}  // namespace minictx
