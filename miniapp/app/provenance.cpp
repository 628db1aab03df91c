#include "app/provenance.hpp"

#include <mpi.h>

#include <algorithm>
#include <ctime>
#include <iterator>
#include <vector>

#include "app/system_info.hpp"
#include "build_info.hpp"
#include "core/error.hpp"
#include "core/sha256.hpp"

#ifdef MINICTX_HAVE_CUDA
#include <nccl.h>
#endif

extern char** environ;

namespace minictx {
namespace {

// The SHA-256 of the running binary, or why there is none (a system without /proc).
std::string binary_digest() {
  try {
    return sha256_file_hex("/proc/self/exe");
  } catch (const Error& e) {
    return std::string("not available: ") + e.what();
  }
}

}  // namespace

std::string deck_file_digest(const std::string& path) { return path.empty() ? "" : sha256_file_hex(path); }

Provenance collect_provenance(const Comm& world, const Device& device, const std::string& command_line,
                              const std::string& deck_yaml) {
  Provenance p;
  p.text["version"] = build::version;
  p.text["git_sha"] = build::git_sha;
  p.text["git_dirty"] = build::git_dirty ? "true" : "false";
  p.text["compiler"] = build::compiler;
  p.text["c_compiler"] = build::c_compiler;
  if (*build::cuda_compiler) p.text["cuda_compiler"] = build::cuda_compiler;
  p.text["cxx_flags"] = build::cxx_flags;
  p.text["build_type"] = build::build_type;
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  std::string mpi_text(mpi, size_t(len));
  while (!mpi_text.empty() && (mpi_text.back() == '\n' || mpi_text.back() == ' ')) mpi_text.pop_back();
  p.text["mpi_version"] = mpi_text;
  p.text["device"] = device.name();
  p.text["device_config"] = device.description();
  for (const auto& [key, value] : host_system_facts()) p.text[key] = value;
  for (const auto& [key, value] : device.system_facts()) p.text[key] = value;
#ifdef MINICTX_HAVE_CUDA
  // NCCL's own version (2.9 on: major·10000 + minor·100 + patch; before: major·1000 + ...).
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    const int major_unit = nccl >= 20900 ? 10000 : 1000;
    p.text["nccl_version"] = std::to_string(nccl / major_unit) + "." +
                             std::to_string(nccl % major_unit / 100) + "." + std::to_string(nccl % 100);
  }
#endif
  p.text["command_line"] = command_line;
  p.text["deck"] = deck_yaml;
  // Rank 0 writes the file; hashing the binary on every rank would read it from a shared
  // file system once per rank.
  if (world.rank() == 0) p.text["binary_sha256"] = binary_digest();
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  p.text["date"] = date;
  // The batch system's view of the job (Slurm, PBS), when there is one, and the settings
  // that choose the network of NCCL, UCX, libfabric and the MPI libraries.
  constexpr const char* recorded[] = {"SLURM_", "PBS_",      "NCCL_",  "UCX_",
                                      "FI_",    "OMPI_MCA_", "MPICH_", "I_MPI_"};
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (std::any_of(std::begin(recorded), std::end(recorded),
                    [&](const char* prefix) { return kv.rfind(prefix, 0) == 0; })) {
      const auto eq = kv.find('=');
      p.text["env." + kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  p.numbers["world_size"] = world.size();
  p.numbers["ranks_per_node"] = world.topology().ranks_per_node;
  p.numbers["nodes"] = world.topology().nodes();

  char name[MPI_MAX_PROCESSOR_NAME] = {};
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(size_t(MPI_MAX_PROCESSOR_NAME) * size_t(world.size()));
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                MPI_COMM_WORLD);
  for (int r = 0; r < world.size(); ++r)
    p.hostnames.emplace_back(all.data() + size_t(r) * MPI_MAX_PROCESSOR_NAME);
  return p;
}

}  // namespace minictx
