#include "app/output_path.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "core/error.hpp"
#include "core/file_kind.hpp"
#include "io/output_file.hpp"

namespace fs = std::filesystem;

namespace minictx {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Batch job ids may hold characters a file name should not ("1234.pbs-server").
std::string file_safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return s;
}

std::string job_tag() {
  if (const std::string slurm = env("SLURM_JOB_ID"); !slurm.empty()) {
    const std::string task = env("SLURM_ARRAY_TASK_ID");
    return file_safe("job" + slurm + (task.empty() ? "" : "_" + task));
  }
  if (const std::string pbs = env("PBS_JOBID"); !pbs.empty()) return file_safe("job" + pbs);
  return "pid" + std::to_string(::getpid());
}

}  // namespace

void prepare_output_path(const std::string& path, bool may_exist, const std::string& what) {
  const std::string named = what + " " + path;
  if (path.empty()) input_error(what + ": the file name is empty");
  if (path.back() == '/') input_error(named + ": names a directory (ends in '/'); give a file name");
  refuse_special_file(path, what);
  std::error_code ec;
  if (!may_exist && fs::exists(path, ec))
    input_error(named + ": the file exists; remove it or choose another name");
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) input_error(named + ": cannot create the directory " + dir.string() + ": " + ec.message());
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    input_error(named + ": cannot write in the directory " + dir.string() + ": " + std::strerror(errno));
  require_room_for_scratch(path, what);
}

std::string default_output_name(const std::string& dir, int attempt) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return dir + "/minictx-" + stamp + "-" + job_tag() + (attempt > 1 ? "-" + std::to_string(attempt) : "") +
         ".h5";
}

}  // namespace minictx
