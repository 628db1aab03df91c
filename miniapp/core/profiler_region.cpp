#include "core/profiler_region.hpp"

#include <Kokkos_Core.hpp>
#include <map>
#include <string>
#ifdef MINICTX_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace minictx {
namespace {

// The Kokkos section of `name`, created once the tool is there to number it.
uint32_t section_of(const char* name) {
  static std::map<std::string, uint32_t> sections;
  const auto it = sections.find(name);
  if (it != sections.end()) return it->second;
  uint32_t id = 0;
  Kokkos::Profiling::createProfileSection(name, &id);
  sections.emplace(name, id);
  return id;
}

}  // namespace

void push_profiler_region(const char* name) {
  if (Kokkos::Profiling::profileLibraryLoaded()) Kokkos::Profiling::pushRegion(name);
#ifdef MINICTX_HAVE_NVTX
  nvtxRangePushA(name);
#endif
}

void pop_profiler_region() {
  if (Kokkos::Profiling::profileLibraryLoaded()) Kokkos::Profiling::popRegion();
#ifdef MINICTX_HAVE_NVTX
  nvtxRangePop();
#endif
}

ProfilerSpan ProfilerSpan::open(const char* name) {
  ProfilerSpan s;
  if (Kokkos::Profiling::profileLibraryLoaded()) {
    s.section_ = section_of(name);
    Kokkos::Profiling::startSection(s.section_);
  }
#ifdef MINICTX_HAVE_NVTX
  s.range_ = nvtxRangeStartA(name);
#endif
  return s;
}

void ProfilerSpan::close() {
  if (section_ != kNoSection && Kokkos::Profiling::profileLibraryLoaded())
    Kokkos::Profiling::stopSection(section_);
  section_ = kNoSection;
#ifdef MINICTX_HAVE_NVTX
  if (range_ != 0) nvtxRangeEnd(range_);
#endif
  range_ = 0;
}

}  // namespace minictx
