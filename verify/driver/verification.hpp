#pragma once
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "comm/comm.hpp"
#include "config/run_config.hpp"
#include "device/device.hpp"
#include "driver/comparison.hpp"
#include "io/results.hpp"
#include "reference/reference.hpp"

namespace minictx {

struct Verification {
  std::string reference;  // fp64 | single-device
  std::vector<VerifyRow> rows;
  bool valid = false;  // every row passes and nothing is NaN/Inf
};

// The fp64 reference of one problem: attention's in attention mode, the model's otherwise.
struct Fp64Result {
  reference::AttentionResult attention;
  reference::ModelResult model;
};

// The fp64 references of one launch's points, each computed once. A point's reference
// depends on its problem only (mode, shapes, mask, seed, and in attention mode the dtype
// its inputs are stored in: reference::Problem), not on how the backend computes it
// (backend, layout, ring_type, checkpointing, tiles, a model's dtype), so points that
// differ only in that share one. Told beforehand which points will ask, it
// keeps a result until the last of them has had it.
class ReferenceCache {
 public:
  void expect(const RunConfig& cfg);  // one more point will ask for cfg's reference
  // cfg's reference: computed on the first request, then the stored one.
  std::shared_ptr<const Fp64Result> take(const RunConfig& cfg);

  // Everything the reference reads from a deck: equal keys, equal references.
  using Key =
      std::tuple<int, int, int64_t, int, int, int, int, int, int, bool, double, double, uint64_t, double, int,
                 std::vector<std::vector<int64_t>>, int64_t, int, std::vector<int64_t>, bool, int>;

 private:
  struct Entry {
    int askers = 0;
    std::shared_ptr<const Fp64Result> result;
  };
  std::map<Key, Entry> entries_;
};

// Runs one step of the configured backend (forward and backward) on all ranks, gathers
// the global outputs and gradients, and compares them on rank 0 with the reference on
// the same global inputs. The verdict is agreed on every rank. With `dump_path`, rank 0
// also writes the global inputs, weights, outputs and gradients to that HDF5 file, with
// `deck_yaml` (the point's resolved deck) and the model's conventions as attributes.
// With `references`, an fp64 reference comes from there (see ReferenceCache).
Verification verify_point(const RunConfig& cfg, Comm& world, Device& device, Reference reference,
                          const std::string& dump_path = "", const std::string& deck_yaml = "",
                          ReferenceCache* references = nullptr);

// The fp64 reference's problem for a deck's point: its shape, seed and packed documents,
// and in attention mode the dtype the run stores its inputs in.
reference::Problem reference_problem(const RunConfig& cfg);

// One step of `cfg` on `comm` (forward and backward): the global outputs and gradients, as
// verify compares and dumps them, on every rank of it.
std::vector<DumpArray> run_point(const RunConfig& cfg, Comm& comm, Device& device);

// The rows a verification of `cfg` holds, in its table's order: attention mode's
// outputs/o, outputs/lse and grads/q, k, v (and grads/sinks); the model's outputs/loss,
// outputs/y, grads/x and every layer's weight gradients (grads/layer<l>/<weight>, and
// grads/layer<l>/sinks); then compare_arrays' rows: the one-device run's own (a 16-bit run
// against fp64) and checks/loss_of_y (model mode).
std::vector<std::string> verification_tensor_names(const RunConfig& cfg);

// The fp64 reference of `cfg`'s problem, computed anew.
Fp64Result fp64_result(const RunConfig& cfg);

// The fp64 reference's values under the names and shapes of run_point's arrays `like`.
std::vector<DumpArray> fp64_arrays(const RunConfig& cfg, const Fp64Result& r,
                                   const std::vector<DumpArray>& like);

}  // namespace minictx
