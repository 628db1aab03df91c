#pragma once
// One writer per results file: a run claims its output for its whole life with an OS lock
// on a file beside it (`FILE.lock`), so a second run or --resume of the same file is
// refused instead of both rewriting it. The lock is an open-file-description lock
// (fcntl F_OFD_SETLK; POSIX F_SETLK where the kernel lacks it): it works on node-local
// and NFS/Lustre file systems alike and dies with the process, so a killed job never
// leaves a stale claim, only a lock file that the next run takes over.
#include <string>

#include "core/error.hpp"

namespace minictx {

// A claim refused because another live process holds it.
class OutputInUse : public InputError {
 public:
  using InputError::InputError;
};

class OutputClaim {
 public:
  // Takes the lock on `path`.lock (creating it) and writes "<host> <pid>" into it.
  // OutputInUse, naming the holder's host and pid, if another process holds it;
  // InputError if the lock file cannot be created. On a file system without locks it
  // warns once on stderr and goes on unclaimed.
  explicit OutputClaim(const std::string& path);
  // Removes the lock file (if it is still this claim's) and releases the lock.
  ~OutputClaim();
  OutputClaim(OutputClaim&& other) noexcept;
  OutputClaim& operator=(OutputClaim&&) = delete;
  OutputClaim(const OutputClaim&) = delete;
  OutputClaim& operator=(const OutputClaim&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;  // the results file claimed
  std::string lock_path_;
  int fd_ = -1;
};

// "<host> <pid>" of this process, as a claim records it.
std::string this_process();

}  // namespace minictx
