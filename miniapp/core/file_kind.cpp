#include "core/file_kind.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace minictx {

std::string special_file_kind(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "a special file";
}

void refuse_special_file(const std::string& path, const std::string& what) {
  const std::string kind = special_file_kind(path);
  if (!kind.empty()) input_error(what + " " + path + ": is " + kind + ", not a regular file");
}

void require_regular_file(const std::string& path, const std::string& what) {
  refuse_special_file(path, what);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    input_error(what + " " + path + ": " + (errno == ENOENT ? "not found" : std::strerror(errno)));
}

}  // namespace minictx
