#pragma once
// Output file names checked before any work (a results file, a verification dump, a
// bench file), so that a run never computes for hours and then cannot write. Rank 0 calls
// these inside agree(), so every rank learns of a failure.
#include <string>

namespace minictx {

// Creates the missing parent directories. InputError (one line naming `what` and the
// path) when the name ends in '/', when the path exists and is not a regular file, when
// it exists and `may_exist` is false, or when its directory cannot be created or written.
void prepare_output_path(const std::string& path, bool may_exist, const std::string& what);

// A results file name no other job uses: `<dir>/minictx-<YYYYmmdd-HHMMSS>-<job>.h5`,
// where <job> names the batch job (Slurm: SLURM_JOB_ID, plus _SLURM_ARRAY_TASK_ID in an
// array; PBS: PBS_JOBID) or else is `pid<PID>`. The file is created empty with O_EXCL,
// and a taken name gets a suffix -2, -3, ...: jobs started together in one directory
// never share a file.
std::string create_default_output(const std::string& dir);

}  // namespace minictx
