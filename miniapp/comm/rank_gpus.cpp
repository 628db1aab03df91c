#include "comm/rank_gpus.hpp"

#include <cstring>

namespace minictx {
namespace {

// One rank's record, fixed in size for MPI_Allgather: its host, then its bus id.
constexpr size_t kBusIdBytes = 64;
constexpr size_t kRecordBytes = MPI_MAX_PROCESSOR_NAME + kBusIdBytes;

}  // namespace

std::vector<RankGpu> gather_rank_gpus(const MpiComm& world, const std::string& bus_id) {
  std::vector<char> mine(kRecordBytes, '\0');
  int host_len = 0;
  MPI_Get_processor_name(mine.data(), &host_len);
  bus_id.copy(mine.data() + MPI_MAX_PROCESSOR_NAME, kBusIdBytes - 1);
  std::vector<char> all(kRecordBytes * size_t(world.size()));
  check_mpi(MPI_Allgather(mine.data(), int(kRecordBytes), MPI_CHAR, all.data(), int(kRecordBytes), MPI_CHAR,
                          world.handle()),
            "MPI_Allgather");
  std::vector<RankGpu> ranks;
  for (int r = 0; r < world.size(); ++r) {
    const char* record = all.data() + kRecordBytes * size_t(r);
    ranks.push_back({world.world_rank_of(r), std::string(record, strnlen(record, MPI_MAX_PROCESSOR_NAME)),
                     std::string(record + MPI_MAX_PROCESSOR_NAME,
                                 strnlen(record + MPI_MAX_PROCESSOR_NAME, kBusIdBytes))});
  }
  return ranks;
}

}  // namespace minictx
