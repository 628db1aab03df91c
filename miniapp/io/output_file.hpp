#pragma once
// Output files written whole: the bytes go to a scratch file of this process beside the
// output (`PATH.<host>-<pid>.partial`), are fsynced, and the scratch is then published at
// the output's name, so a reader sees the old file or the new one, never part of one, and
// a full disk is one error line. A scratch name is this process's alone: whatever is found
// there is unlinked, never written through (a planted link leads nowhere).
#include <string>

namespace minictx {

std::string scratch_name(const std::string& path);

// The directory part of `path` ("." for a bare name).
std::string directory_of(const std::string& path);

// InputError (one line: WHAT PATH, the bytes the scratch suffix adds and the directory's
// limit) when the scratch name of `path` would be longer than a name in its directory may be.
void require_room_for_scratch(const std::string& path, const std::string& what = "results file");

// Writes `bytes` to the new file `scratch` and fsyncs it; Error naming errno (and nothing
// left behind) if that fails.
void write_scratch(const std::string& scratch, const std::string& bytes);

// Puts `scratch` at `path` unless `path` exists (then InputError `refusal`, and the scratch
// is removed): of several writers given one name, exactly one goes on. A hard link is that
// atomic exclusive create; where the file system has none, an empty O_EXCL file claims the
// name first.
void publish_exclusive(const std::string& scratch, const std::string& path, const std::string& refusal);

// Renames `scratch` onto `path` (atomic on POSIX).
void publish_replace(const std::string& scratch, const std::string& path);

// Makes the names published in the directory of `path` durable.
void sync_directory_of(const std::string& path);

// A whole output file of one write (bench, verify --dump, report --csv), written under the claim
// every writer of an output takes (io/output_claim.hpp): refused with OutputInUse while a
// run holds `path`, and with InputError `refusal` if `path` exists and `replace` is false.
void write_output_file(const std::string& path, const std::string& what, bool replace,
                       const std::string& bytes, const std::string& refusal);

}  // namespace minictx
