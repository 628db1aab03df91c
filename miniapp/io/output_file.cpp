#include "io/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "core/file_kind.hpp"
#include "io/output_claim.hpp"

namespace minictx {
namespace {

[[noreturn]] void io_fail(const std::string& what, const std::string& path, int err) {
  fail("cannot " + what + " '" + path + "': " + std::strerror(err));
}

}  // namespace

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string scratch_name(const std::string& path) {
  // Host and process make the name unique among jobs sharing a directory, even across
  // nodes of a shared file system.
  std::string host_pid = this_process();
  host_pid[host_pid.rfind(' ')] = '-';
  return path + "." + host_pid + ".partial";
}

void require_room_for_scratch(const std::string& path, const std::string& what) {
  const std::string scratch = scratch_name(path);
  long limit = ::pathconf(directory_of(path).c_str(), _PC_NAME_MAX);
  if (limit <= 0) limit = 255;
  const size_t slash = scratch.rfind('/');
  const size_t base = scratch.size() - (slash == std::string::npos ? 0 : slash + 1);
  if (base <= static_cast<size_t>(limit)) return;
  const size_t suffix = scratch.size() - path.size();
  const std::string allowed =
      static_cast<size_t>(limit) > suffix ? std::to_string(static_cast<size_t>(limit) - suffix) : "0";
  input_error(what + " " + path + ": the name is too long; its scratch file adds " + std::to_string(suffix) +
              " bytes (." + scratch.substr(path.size() + 1) + ") and names in its directory hold at most " +
              std::to_string(limit) + " bytes, so the file name may have " + allowed + " at most");
}

void write_scratch(const std::string& scratch, const std::string& bytes) {
  ::unlink(scratch.c_str());  // a killed process of the same pid's, or a planted link
  const int fd = ::open(scratch.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) io_fail("create", scratch, errno);
  size_t done = 0;
  int err = 0;
  while (done < bytes.size() && err == 0) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = n < 0 ? errno : ENOSPC;
    done += n > 0 ? size_t(n) : 0;
  }
  // close() can report a deferred write error (NFS); fsync makes the bytes durable.
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(scratch.c_str());
    io_fail("write", scratch, err);
  }
}

void publish_exclusive(const std::string& scratch, const std::string& path, const std::string& refusal) {
  if (::link(scratch.c_str(), path.c_str()) == 0) {
    ::unlink(scratch.c_str());
    return;
  }
  if (errno != EEXIST) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      if (std::rename(scratch.c_str(), path.c_str()) == 0) return;
    }
    if (errno != EEXIST) {
      const int err = errno;
      ::unlink(scratch.c_str());
      io_fail("create", path, err);
    }
  }
  ::unlink(scratch.c_str());
  input_error(refusal);
}

void publish_replace(const std::string& scratch, const std::string& path) {
  if (std::rename(scratch.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(scratch.c_str());
    fail("cannot rename '" + scratch + "' onto '" + path + "': " + std::strerror(err));
  }
}

void sync_directory_of(const std::string& path) {
  const std::string dir = directory_of(path);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) io_fail("open the directory", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot sync a directory (EINVAL); the file itself is synced already.
  if (rc != 0 && err != EINVAL) io_fail("sync the directory", dir, err);
}

void write_output_file(const std::string& path, const std::string& what, bool replace,
                       const std::string& bytes, const std::string& refusal) {
  refuse_special_file(path, what);
  require_room_for_scratch(path, what);
  const OutputClaim claim(path, what);
  const std::string scratch = scratch_name(path);
  try {
    write_scratch(scratch, bytes);
  } catch (const Error& e) {
    throw Error(what + " " + path + ": " + e.what());
  }
  if (replace)
    publish_replace(scratch, path);
  else
    publish_exclusive(scratch, path, refusal);
  sync_directory_of(path);
}

}  // namespace minictx
