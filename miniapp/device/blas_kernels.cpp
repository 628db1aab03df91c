#include "device/blas_kernels.hpp"

#include <cblas.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace minictx {
namespace {

// Set on the re-executed process: the core OpenBLAS detected on its own.
constexpr const char* kDetectedVar = "MINICTX_BLAS_DETECTED_CORE";
// Set by the tests: restart whatever OpenBLAS detected, so that the restart's path runs on
// machines whose CPU OpenBLAS knows.
constexpr const char* kForceVar = "MINICTX_TEST_BLAS_RESTART";

// The kernels this CPU can run, by its features; nullptr when it has no AVX2 (then
// OpenBLAS's fallback is all there is).
const char* core_for_cpu_features() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

// The kernel names a process after the file it executes, and the restart executes
// /proc/self/exe: without this the ranks would run as `exe`, and `ps -C minictx`, pgrep,
// top and job monitors would not see them. The name is what the first exec gave it: the
// base name of the program as launched (15 characters at most, as the kernel keeps).
void keep_process_name(const char* argv0) {
  if (!argv0) return;
  const char* slash = std::strrchr(argv0, '/');
  prctl(PR_SET_NAME, slash ? slash + 1 : argv0, 0, 0, 0);
}

}  // namespace

void choose_blas_kernels(char** argv) {
  if (std::getenv(kDetectedVar)) keep_process_name(argv[0]);
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv(kDetectedVar)) return;
  const char* detected = openblas_get_corename();
  // Prescott is what OpenBLAS falls back to for a CPU model it does not know; any other
  // choice was made from the model and is left alone.
  const bool fallback = detected && std::strcmp(detected, "Prescott") == 0;
  if (!detected || (!fallback && !std::getenv(kForceVar))) return;
  const char* core = core_for_cpu_features();
  if (!core) return;
  setenv(kDetectedVar, detected, 1);
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);
  // Only reached when exec failed: run on with the detected kernels, and say nothing was replaced.
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kDetectedVar);
}

std::string blas_description() {
  std::string s = openblas_get_config();
  if (const char* detected = std::getenv(kDetectedVar))
    s += std::string(" (kernels chosen by minictx from the CPU's features; OpenBLAS detected ") + detected +
         ")";
  return s;
}

}  // namespace minictx
