#include "io/output_claim.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "io/output_file.hpp"

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
  return ::fstat(fd, &open_file) == 0 && ::lstat(path.c_str(), &named) == 0 &&
         open_file.st_dev == named.st_dev && open_file.st_ino == named.st_ino;
}

constexpr size_t kMaxClaimBytes = 300;  // "<host> <pid>\n": a host name has at most 255

// What the lock file holds, trailing newline and blanks dropped.
std::string claim_text(int fd) {
  char text[kMaxClaimBytes + 1] = {};
  const ssize_t n = ::pread(fd, text, sizeof text, 0);
  std::string host_pid(text, n > 0 ? static_cast<size_t>(n) : 0);
  while (!host_pid.empty() && (host_pid.back() == '\n' || host_pid.back() == ' ')) host_pid.pop_back();
  return host_pid;
}

// "host H, pid P" as the holder wrote it, or a plain phrase while it has not yet.
std::string holder_of(int fd) {
  const std::string host_pid = claim_text(fd);
  const size_t space = host_pid.rfind(' ');
  if (space == std::string::npos || space == 0) return "holder not yet named";
  return "host " + host_pid.substr(0, space) + ", pid " + host_pid.substr(space + 1);
}

// Empty, or "<host> <pid>" as a claim writes it: a lock file minictx made.
bool holds_a_claim(int fd, off_t size) {
  if (size == 0) return true;
  if (size > off_t(kMaxClaimBytes)) return false;
  const std::string text = claim_text(fd);
  const size_t space = text.find(' ');
  return space != std::string::npos && space + 1 < text.size() && text.find('\n') == std::string::npos &&
         text.find_first_not_of("0123456789", space + 1) == std::string::npos;
}

// Why minictx may not write the lock file open as `fd` (made by this call if `created`), or "".
std::string unfit_lock(int fd, const std::string& lock_path, bool created) {
  struct stat st, dir;
  if (::fstat(fd, &st) != 0) return std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (st.st_nlink != 1) return "is a hard link (the file has other names)";
  if (::stat(directory_of(lock_path).c_str(), &dir) == 0 && dir.st_dev != st.st_dev)
    return "is on another file system than its directory (a mount point)";
  if (!created && !holds_a_claim(fd, st.st_size)) return "holds something other than a claim";
  return "";
}

// The lock file, opened without following a link; `created` when this call made it.
int open_lock(const std::string& lock_path, bool& created) {
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  created = fd >= 0;
  if (fd < 0 && errno == EEXIST) fd = ::open(lock_path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  return fd;
}

bool locks_unsupported(int err) { return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS; }

}  // namespace

std::string this_process() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + " " + std::to_string(::getpid());
}

OutputClaim::OutputClaim(const std::string& path, const std::string& what)
    : path_(path), lock_path_(path + ".lock") {
  const std::string named = what + " " + path_ + ": its lock file " + lock_path_;
  // A holder removes the lock file as it ends; a file opened just before that is no
  // longer the one at the name, so the claim starts again on the new one.
  for (int attempt = 0; attempt < 100; ++attempt) {
    bool created = false;
    const int fd = open_lock(lock_path_, created);
    if (fd < 0 && errno == ENOENT) continue;  // removed between the two opens
    if (fd < 0 && errno == ELOOP)
      input_error(named + " is a symbolic link; minictx follows no link there (remove it)");
    if (fd < 0) input_error(named + " cannot be created: " + std::strerror(errno));
    if (const std::string why = unfit_lock(fd, lock_path_, created); !why.empty()) {
      ::close(fd);
      input_error(named + " " + why + "; minictx writes only a lock file of its own there (remove it)");
    }
    const int err = try_lock(fd);
    if (err == EAGAIN || err == EACCES) {
      const std::string holder = holder_of(fd);
      ::close(fd);
      throw OutputInUse(what + " " + path_ + " is being written by another run (" + holder +
                        "): one run writes a file at a time; wait for it to end or choose another name");
    }
    if (err != 0 && !locks_unsupported(err)) {
      ::close(fd);
      input_error(what + " " + path_ + ": cannot lock " + lock_path_ + ": " + std::strerror(err));
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
  input_error(what + " " + path_ + ": its lock file " + lock_path_ + " keeps being replaced");
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
