// A Kokkos Tools library of the tests' own: loaded by Kokkos::initialize from
// KOKKOS_PROFILE_LIBRARY (Kokkos 3) or KOKKOS_TOOLS_LIBS (Kokkos 4), it records the
// regions and sections of one process (region_log.hpp) and at Kokkos::finalize writes its
// report to MINICTX_REGION_LOG.<pid>.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "region_log.hpp"

namespace {
// Never destroyed: Kokkos may finalize from an exit handler that runs after the static
// objects created later than its registration are gone.
minictx_tools::RegionLog& log() {
  static auto* l = new minictx_tools::RegionLog;
  return *l;
}
uint32_t next_section = 0;
}  // namespace

extern "C" {

void kokkosp_init_library(const int, const uint64_t, const uint32_t, void*) {}

void kokkosp_finalize_library() {
  const char* path = std::getenv("MINICTX_REGION_LOG");
  if (!path) return;
  std::ofstream(std::string(path) + "." + std::to_string(getpid())) << log().report();
}

void kokkosp_push_profile_region(const char* name) { log().push(name); }
void kokkosp_pop_profile_region() { log().pop(); }

void kokkosp_create_profile_section(const char* name, uint32_t* id) {
  *id = next_section++;
  log().create_section(name, *id);
}
void kokkosp_start_profile_section(const uint32_t id) { log().start_section(id); }
void kokkosp_stop_profile_section(const uint32_t id) { log().stop_section(id); }
void kokkosp_destroy_profile_section(const uint32_t) {}

}  // extern "C"
