#include "app/exit_status.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace minictx {

void record_exit_status(int code) {
  const char* path = std::getenv("MINICTX_STATUS_FILE");
  if (!path || !*path) return;
  // Written beside and renamed, so a script never reads half a line.
  const std::string scratch = std::string(path) + "." + std::to_string(::getpid()) + ".partial";
  FILE* f = std::fopen(scratch.c_str(), "w");
  const bool written = f && std::fprintf(f, "%d\n", code) > 0;
  const bool closed = f && std::fclose(f) == 0;
  if (!written || !closed || std::rename(scratch.c_str(), path) != 0) {
    std::remove(scratch.c_str());
    std::fprintf(stderr, "minictx: warning: cannot write the exit status to MINICTX_STATUS_FILE=%s\n", path);
  }
}

}  // namespace minictx
