#pragma once
#include <time.h>

namespace minictx {

// What a benchmark times: wall time (the default; what a user waits for), or the CPU time
// of the calling thread, which on a shared machine leaves out the time other processes
// held the core (caches and memory bandwidth are still shared). The thread's, not the
// process's: OpenBLAS's idle worker threads spin for a while after start-up.
enum class BenchClock { wall, cpu };

inline double bench_now(BenchClock clock) {
  timespec t{};
  clock_gettime(clock == BenchClock::cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace minictx
