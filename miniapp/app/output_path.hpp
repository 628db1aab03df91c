#pragma once
// Output file names checked before any work (a results file, a verification dump, a
// bench file), so that a run never computes for hours and then cannot write. Rank 0 calls
// these inside agree(), so every rank learns of a failure.
#include <string>

namespace minictx {

// Creates the missing parent directories. InputError (one line naming `what` and the
// path) when the name ends in '/', when the path exists and is not a regular file, when
// it exists and `may_exist` is false, when its directory cannot be created or written, or
// when the name leaves no room for its scratch file (io/output_file.hpp).
void prepare_output_path(const std::string& path, bool may_exist, const std::string& what);

// The default results file name: `<dir>/minictx-<YYYYmmdd-HHMMSS>-<job>.h5`, where <job>
// names the batch job (Slurm: job<SLURM_JOB_ID>, plus _<SLURM_ARRAY_TASK_ID> in an array;
// PBS: job<PBS_JOBID>) or else is pid<PID>; attempt n > 1 adds the suffix -n. The caller
// creates it exclusively (OnExisting::refuse) and tries the next attempt when it is taken,
// so jobs started together in one directory never share a file.
std::string default_output_name(const std::string& dir, int attempt);

}  // namespace minictx
