// The cost of one profiler region and one transfer span (core/profiler_region.hpp), as a
// phase, ring step or transfer opens them: a benchmark, not a test (docs/performance.md,
// "Profiler regions"). Kokkos is initialised as the run does, so a tool named by
// KOKKOS_PROFILE_LIBRARY / KOKKOS_TOOLS_LIBS is attached and measured too.
//
//   minictx_region_cost [PAIRS]    (default 10^7)
#include <time.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>

#include "core/profiler_region.hpp"

int main(int argc, char** argv) {
  const long pairs = argc > 1 ? std::atol(argv[1]) : 10000000L;
  Kokkos::ScopeGuard kokkos(argc, argv);
  // This thread's CPU time: a loaded machine's other work does not count.
  const auto cpu_ns = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
  };
  const auto time = [&](auto body) {
    const double t0 = cpu_ns();
    for (long i = 0; i < pairs; ++i) body();
    return (cpu_ns() - t0) / double(pairs);
  };
  const double region = time([] { const minictx::ProfilerRegion r(minictx::region::ring_step); });
  const double span = time([] { minictx::ProfilerSpan::open(minictx::span::ring_transfer).close(); });
  std::printf("tool attached: %s\nregion (push and pop): %.1f ns CPU\nspan (open and close): %.1f ns CPU\n",
              Kokkos::Profiling::profileLibraryLoaded() ? "yes" : "no", region, span);
  return 0;
}
