#include "app/agree.hpp"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <exception>

#include "comm/watchdog.hpp"
#include "core/single_line.hpp"

namespace minictx {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

bool agree(const std::function<void()>& f) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string message;
  // The lowest failing rank, ranks that only waited for others counted after all the
  // rest: the line names the failure, not a wait for it.
  int failed = INT_MAX;
  try {
    f();
  } catch (const watchdog::WaitedForOthers& e) {
    message = e.what();
    failed = size + world_rank();
  } catch (const std::exception& e) {
    message = e.what();
    failed = world_rank();
  }
  int first = INT_MAX;
  MPI_Allreduce(&failed, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT_MAX) return true;
  const int from = first % size;
  int len = int(message.size());
  MPI_Bcast(&len, 1, MPI_INT, from, MPI_COMM_WORLD);
  message.resize(size_t(len));
  MPI_Bcast(message.data(), len, MPI_CHAR, from, MPI_COMM_WORLD);
  input_error_exit(message);
  return false;
}

int input_error_exit(const std::string& what) {
  if (world_rank() == 0) {
    std::string line;
    size_t begin = 0;
    while (begin <= what.size()) {
      size_t end = what.find('\n', begin);
      if (end == std::string::npos) end = what.size();
      if (end > begin) line += (line.empty() ? "" : "; ") + what.substr(begin, end - begin);
      begin = end + 1;
    }
    std::fprintf(stderr, "minictx: error: %s\n", single_line(line).c_str());
    std::fflush(stderr);
  }
  return 2;
}

}  // namespace minictx
