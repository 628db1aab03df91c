#include "comm/watchdog.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace minictx::watchdog {
namespace {

struct State {
  double configured = -1;
  double slowest_step = 0;
  std::string point;
  void (*record)(int) = nullptr;
};

State& state() {
  static State s;
  return s;
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", s);
  return text;
}

std::string rank_text() {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return "rank " + std::to_string(rank);
}

std::string where() { return point().empty() ? "outside any point" : "at " + point(); }

enum class Outcome { done, fault, limit };

// What ended a wait, after how long.
struct Ending {
  Outcome outcome = Outcome::done;
  std::string fault;
  double waited = 0;
};

// Polls until done, a fault or the limit; on the last two the transport's pending work
// is given up (Watch::abandon) before anything is said.
Ending poll(const Watch& w) {
  const double limit = limit_seconds();
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  Ending e;
  for (;;) {
    if (w.fault) e.fault = w.fault();
    if (!e.fault.empty()) {
      e.outcome = Outcome::fault;
      break;
    }
    if (w.done()) return e;
    e.waited = std::chrono::duration<double>(clock::now() - start).count();
    if (limit > 0 && e.waited > limit) {
      e.outcome = Outcome::limit;
      break;
    }
    // Long waits give the core up without delaying the transport's progress much (MPI
    // progresses in the test calls): a yield, or a short sleep where ranks share cores.
    if (e.waited > 1e-3 && w.oversubscribed)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    else if (e.waited > 1e-3)
      std::this_thread::yield();
  }
  if (w.abandon) w.abandon();
  return e;
}

}  // namespace

void configure(double seconds) { state().configured = seconds; }

void set_point(const std::string& what) { state().point = what; }

void step_completed(double seconds) { state().slowest_step = std::max(state().slowest_step, seconds); }

double limit_seconds() {
  const State& s = state();
  if (s.configured >= 0) return s.configured;
  return std::max(kMinAutomaticSeconds, 10 * s.slowest_step);
}

std::string limit_description() {
  const State& s = state();
  if (s.configured >= 0) return "run.watchdog_seconds = " + seconds_text(s.configured);
  return "automatic: ten times the slowest step (" + seconds_text(s.slowest_step) + "), at least " +
         seconds_text(kMinAutomaticSeconds);
}

const std::string& point() { return state().point; }

void on_abort(void (*record)(int status)) { state().record = record; }

void abort_job(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  if (state().record) state().record(kFailedJobStatus);
  // The launcher forwards a rank's output asynchronously and may tear the job down
  // before it has: give the line a moment to get out.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  MPI_Abort(MPI_COMM_WORLD, kFailedJobStatus);
  std::abort();  // MPI_Abort does not return; the compiler cannot know
}

void wait(const Watch& w) {
  const Ending e = poll(w);
  if (e.outcome == Outcome::done) return;
  if (e.outcome == Outcome::fault) abort_on_fault(w, e.fault);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", e.waited);
  abort_job("minictx: watchdog: " + rank_text() + " waited " + seconds + " in " + w.call + " (" + w.peers() +
            ") " + where() + "; aborting the job (" + limit_description() + ")");
}

void abort_on_fault(const Watch& w, const std::string& fault) {
  abort_job("minictx: error: " + rank_text() + ": " + fault + " in " + w.call + " (" + w.peers() + ") " +
            where() + "; aborting the job");
}

void wait_to_start(const Watch& w) {
  const Ending e = poll(w);
  if (e.outcome == Outcome::done) return;
  if (e.outcome == Outcome::fault)
    fail(rank_text() + ": " + e.fault + " in " + w.call + " (" + w.peers() + ")");
  throw WaitedForOthers(rank_text() + " waited " + seconds_text(e.waited) + " in " + w.call + " (" +
                        w.peers() + ") for ranks that failed or did not start (" + limit_description() + ")");
}

}  // namespace minictx::watchdog
