#include "app/interrupt.hpp"

#include <mpi.h>

#include <csignal>

namespace minictx {
namespace {

volatile std::sig_atomic_t g_signal = 0;

// Only an async-signal-safe store here; everything else happens in the run loop.
extern "C" void record_signal(int signal) { g_signal = signal; }

}  // namespace

Interrupted::Interrupted(int signal) : Error("interrupted by " + signal_name(signal)), signal_(signal) {}

void install_interrupt_handlers() {
  struct sigaction action = {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: MPI's blocking calls carry on; SA_RESETHAND: a second signal kills.
  action.sa_flags = SA_RESTART | SA_RESETHAND;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

void stop_if_interrupted() {
  int mine = g_signal, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any != 0) throw Interrupted(any);
}

std::string signal_name(int signal) {
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGINT) return "SIGINT";
  return "signal " + std::to_string(signal);
}

}  // namespace minictx
