#include "io/output_claim.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace minictx {
namespace {

// 0 once this open file holds the write lock on the whole file, else the errno.
int try_lock(int fd) {
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
#ifdef F_OFD_SETLK
  if (::fcntl(fd, F_OFD_SETLK, &whole) == 0) return 0;
  if (errno != EINVAL) return errno;  // EINVAL: a kernel without OFD locks
#endif
  return ::fcntl(fd, F_SETLK, &whole) == 0 ? 0 : errno;
}

bool same_file(int fd, const std::string& path) {
  struct stat open_file, named;
  return ::fstat(fd, &open_file) == 0 && ::stat(path.c_str(), &named) == 0 &&
         open_file.st_dev == named.st_dev && open_file.st_ino == named.st_ino;
}

// "host H, pid P" as the holder wrote it, or a plain phrase while it has not yet.
std::string holder_of(int fd) {
  char text[300] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string host_pid(text, n > 0 ? static_cast<size_t>(n) : 0);
  while (!host_pid.empty() && (host_pid.back() == '\n' || host_pid.back() == ' ')) host_pid.pop_back();
  const size_t space = host_pid.rfind(' ');
  if (space == std::string::npos || space == 0) return "holder not yet named";
  return "host " + host_pid.substr(0, space) + ", pid " + host_pid.substr(space + 1);
}

bool locks_unsupported(int err) { return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS; }

}  // namespace

std::string this_process() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + " " + std::to_string(::getpid());
}

OutputClaim::OutputClaim(const std::string& path) : path_(path), lock_path_(path + ".lock") {
  // A holder removes the lock file as it ends; a file opened just before that is no
  // longer the one at the name, so the claim starts again on the new one.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      input_error("results file " + path_ + ": cannot create its lock file " + lock_path_ + ": " +
                  std::strerror(errno));
    const int err = try_lock(fd);
    if (err == EAGAIN || err == EACCES) {
      const std::string holder = holder_of(fd);
      ::close(fd);
      throw OutputInUse("results file " + path_ + " is being written by another run (" + holder +
                        "): one run writes a file at a time; wait for it to end or choose another name");
    }
    if (err != 0 && !locks_unsupported(err)) {
      ::close(fd);
      input_error("results file " + path_ + ": cannot lock " + lock_path_ + ": " + std::strerror(err));
    }
    if (!same_file(fd, lock_path_)) {
      ::close(fd);
      continue;
    }
    if (err != 0)
      std::fprintf(stderr,
                   "minictx: warning: %s: the file system has no locks (%s); nothing stops a second run\n",
                   lock_path_.c_str(), std::strerror(err));
    // Naming the holder is a courtesy: a full disk must not stop the run here.
    const std::string me = this_process() + "\n";
    if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, me.data(), me.size(), 0) < 0) errno = 0;
    fd_ = fd;
    return;
  }
  input_error("results file " + path_ + ": its lock file " + lock_path_ + " keeps being replaced");
}

OutputClaim::OutputClaim(OutputClaim&& other) noexcept
    : path_(std::move(other.path_)),
      lock_path_(std::move(other.lock_path_)),
      fd_(std::exchange(other.fd_, -1)) {}

OutputClaim::~OutputClaim() {
  if (fd_ < 0) return;
  // Removed while still locked, so a waiting claimer finds it gone and makes a new one.
  if (same_file(fd_, lock_path_)) ::unlink(lock_path_.c_str());
  ::close(fd_);
}

}  // namespace minictx
