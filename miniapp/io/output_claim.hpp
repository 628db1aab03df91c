#pragma once
// One writer per output file: every writer of a results file (run, project, bench,
// verify --dump, report --csv) claims it with an OS lock on a file beside it
// (`FILE.lock`), so a second writer is refused instead of both rewriting it. The lock is
// an open-file-description lock (fcntl F_OFD_SETLK; POSIX F_SETLK where the kernel lacks
// it): it works on node-local and NFS/Lustre file systems alike and dies with the process,
// so a killed job never leaves a stale claim, only a lock file that the next run takes
// over. The lock file is opened without following a link, and only ever written when it is
// a regular file of one name, on the file system of its directory, that is empty or holds
// a claim's "<host> <pid>": minictx never truncates a file it did not create.
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
  // InputError (one line beginning "WHAT PATH") if the lock file cannot be created or is not
  // one minictx may write (a link, a hard link, a mount point, a file of other content). On
  // a file system without locks it warns once on stderr and goes on unclaimed.
  explicit OutputClaim(const std::string& path, const std::string& what = "results file");
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
