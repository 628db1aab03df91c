#pragma once
#include <cstdint>

// Named regions for the profilers HPC centres attach to a run: a Kokkos Tools region on
// every build (space-time-stack, Caliper's Kokkos service, any connector named by
// KOKKOS_PROFILE_LIBRARY / KOKKOS_TOOLS_LIBS) and, in the cuda build, an NVTX range
// (Nsight Systems). With no tool attached a region costs a null check in each library.
namespace minictx {

// What the ring walk marks besides the phases (core/phase_names.hpp).
namespace region {
inline constexpr const char* ring_step = "ring_step";              // a visit and the wait after it
inline constexpr const char* ring_wait = "ring_wait";              // the wait for the step's transfer
inline constexpr const char* ring_outer_wait = "ring_outer_wait";  // the wait for an outer-ring transfer
}  // namespace region

// Transfers in flight: they overlap compute and one another, so they are spans (a Kokkos
// profile section, an NVTX start/end range), not nested regions.
namespace span {
inline constexpr const char* ring_transfer = "ring_transfer";
inline constexpr const char* ring_outer_block = "ring_outer_block";
inline constexpr const char* ring_outer_sums = "ring_outer_sums";
}  // namespace span

void push_profiler_region(const char* name);
void pop_profiler_region();

// A region open for its lifetime; regions nest (one stack per thread).
class ProfilerRegion {
 public:
  explicit ProfilerRegion(const char* name) { push_profiler_region(name); }
  ~ProfilerRegion() { pop_profiler_region(); }
  ProfilerRegion(const ProfilerRegion&) = delete;
  ProfilerRegion& operator=(const ProfilerRegion&) = delete;
};

// A span between open() and close(), which need not nest with regions or other spans. A
// span that was never opened closes nothing.
class ProfilerSpan {
 public:
  static ProfilerSpan open(const char* name);
  void close();

 private:
  static constexpr uint32_t kNoSection = UINT32_MAX;
  uint32_t section_ = kNoSection;  // Kokkos profile section
  uint64_t range_ = 0;             // NVTX range id (0: none)
};

}  // namespace minictx
