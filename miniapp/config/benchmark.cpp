#include "config/benchmark.hpp"

#include "config/backend_catalog.hpp"
#include "core/error.hpp"

namespace minictx {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Keys (or whole sections, written "section.") in the order the report checks them; the
// first entry that matches decides. A key no entry names is not allowed: a new deck key
// is fixed by the class until the rules say otherwise.
struct Entry {
  const char* key;
  bool allowed;
  const char* why;
};
constexpr Entry rules[] = {
    {"model.", false, "the model shape is the class's problem"},
    {"sequence.length", false, "the sequence length is the class's problem"},
    {"sequence.batch", false, "the batch is the class's problem"},
    {"attention.causal", false, "the causal mask is the class's problem"},
    {"run.dtype", false, "the dtype sets the problem's precision and its verification tolerance"},
    {"run.grad_reduce_dtype", false, "the weight gradients' precision, like the dtype, is the problem's"},
    {"run.mode", false, "the figure of merit is a full training step"},
    {"run.fwd_only", false, "the figure of merit is a full training step"},
    {"run.input_scale", false, "the inputs are the class's problem"},
    {"run.key_directions", false, "the inputs are the class's problem"},
    {"benchmark.class", false, "names the class"},
    {"benchmark.verify_length", false, "the verification scale is the class's"},
    {"benchmark.verify_layers", false, "the verification scale is the class's"},
    {"benchmark.role", true, "measurement or its verification run"},
    {"attention.backend", true, "the sequence-parallel backend is the submitter's choice"},
    {"attention.ring_type", true, "ring layout"},
    {"attention.ulysses_degree", true, "backend degree"},
    {"attention.ring_degree", true, "backend degree"},
    {"attention.window_size", true, "backend degree"},
    {"attention.intra", true, "backend variant"},
    {"attention.bwd_comm", true, "backend variant"},
    {"attention.block_q", true, "kernel tiles"},
    {"attention.block_k", true, "kernel tiles"},
    {"run.checkpointing", true, "a memory/compute trade-off; the figure of merit counts no recompute"},
    {"run.grad_reduce", true, "when gradient sums move"},
    {"run.device", true, "the device the submission runs on"},
    {"run.comm", true, "communication library"},
    {"run.layer_kernels", true,
     "the device's layer kernels; the problem and its verification are the class's"},
    {"run.", true, "timing loop, seed, verification and diagnostics"},
    {"topology.", true, "ranks, nodes and ranks per node"},
    {"machine.", true, "the peak behind MFU; the figure of merit does not use it"},
    {"output.", true, "where the results go"},
};

}  // namespace

RunRule run_rule(const std::string& key) {
  for (const Entry& e : rules) {
    const std::string k = e.key;
    if (k.back() == '.' ? starts_with(key, e.key) : key == k) return {e.allowed, e.why};
  }
  // A new backend's own key: the backend is the submitter's choice, and so are its settings.
  if (is_backend_option(key)) return {true, "the backend's own setting"};
  return {false, "not named by the run rules"};
}

bool verification_may_differ(const std::string& key) {
  return key == "sequence.length" || key == "model.layers" || key == "run.verify" || key == "run.reference" ||
         key == "run.iters" || key == "run.warmup" || key == "run.watchdog_seconds" ||
         key == "run.ring_timeline" || key == "benchmark.role" || starts_with(key, "output.") ||
         starts_with(key, "machine.");
}

void apply_benchmark_role(RunConfig& cfg, const std::string& where) {
  BenchmarkConfig& b = cfg.benchmark;
  if (b.role != "verification") return;
  if (b.class_name.empty())
    input_error(where + ": benchmark.role=verification needs a class deck (benchmark.class is empty)");
  if (b.verify_length <= 0)
    input_error(where + ": benchmark.role=verification needs the class's benchmark.verify_length");
  cfg.sequence.length = b.verify_length;
  if (b.verify_layers > 0) cfg.model.layers = b.verify_layers;
  cfg.run.verify = true;
}

}  // namespace minictx
