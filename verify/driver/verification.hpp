#pragma once
#include <string>
#include <vector>

#include "comm/comm.hpp"
#include "config/run_config.hpp"
#include "device/device.hpp"
#include "io/results.hpp"

namespace minictx {

struct Verification {
  std::string reference;  // fp64 | single-device
  std::vector<VerifyRow> rows;
  bool valid = false;  // every row passes and nothing is NaN/Inf
};

// Runs one step of the configured backend (forward and backward) on all ranks, gathers
// the global outputs and gradients, and compares them on rank 0 with the reference on
// the same global inputs. The verdict is agreed on every rank. With `dump_path`, rank 0
// also writes the global inputs, weights, outputs and gradients to that HDF5 file, with
// `deck_yaml` (the point's resolved deck) and the model's conventions as attributes.
Verification verify_point(const RunConfig& cfg, Comm& world, Device& device, Reference reference,
                          const std::string& dump_path = "", const std::string& deck_yaml = "");

// Error-bound on max |x − ref| / max |ref| for a run's precision (DESIGN: fp32 ~1e-4,
// bf16 2.5e-2 as TransformerEngine, 3.5e-2 with GQA, fp16 5e-3).
double verify_tolerance(const RunConfig& cfg);

// One table row from a tensor and its reference (exposed for tests).
VerifyRow compare_tensor(const std::string& name, const std::vector<double>& got, const std::vector<double>& ref,
                         double tolerance);

}  // namespace minictx
