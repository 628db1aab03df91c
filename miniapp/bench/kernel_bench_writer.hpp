#pragma once
#include <string>

#include "bench/device_bench.hpp"
#include "bench/kernel_bench.hpp"
#include "io/results.hpp"

namespace minictx {

// Writes `minictx bench` results (layout: outputs/README.md, "Benchmark files"): the
// provenance group as in a results file, and /bench with one 1-D dataset per column.
// An existing file is replaced only with `overwrite` (else InputError); written whole
// under the file's claim (io/output_file.hpp), so never while a run writes it.
void write_kernel_bench(const std::string& path, const Provenance& prov, const KernelBenchOptions& opt,
                        const KernelBenchResult& result, bool overwrite);

// The same layout for `minictx bench --device cuda` (its own attributes: device, dtype,
// calibration side, repetitions).
void write_device_bench(const std::string& path, const Provenance& prov, const DeviceBenchOptions& opt,
                        const std::string& device, const KernelBenchResult& result, bool overwrite);

}  // namespace minictx
