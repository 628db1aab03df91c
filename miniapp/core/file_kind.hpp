#pragma once
// Refusing a path by its type before it is opened: opening a FIFO blocks until a writer
// appears (for ever, in a batch job), and a directory or a device is never a deck or a
// results file.
#include <string>

namespace minictx {

// "" when `path` does not exist or is a regular file (symbolic links followed); else what
// it is: "a directory", "a FIFO", "a character device", "a block device", "a socket".
std::string special_file_kind(const std::string& path);

// InputError "WHAT PATH: is a FIFO, not a regular file" unless `path` is absent or a
// regular file.
void refuse_special_file(const std::string& path, const std::string& what);

// As refuse_special_file, and InputError "WHAT PATH: not found" when it is absent (or
// with the reason it cannot be looked at: a name too long, a folder without access).
void require_regular_file(const std::string& path, const std::string& what);

}  // namespace minictx
