#pragma once

#include <string>

// Names in a minictx results file; outputs/README.md documents the layout they form.
namespace minictx::schema {

inline constexpr const char* kFormat = "minictx-results";
// Version 3 files are ordinary HDF5 files whose root attribute journal_id names the records
// of their journal (io/results_journal.hpp); version 2 files may carry points appended after
// the HDF5 part (io/legacy_tail.hpp); version 1 files are version 2 files without them.
inline constexpr int kFormatVersion = 3;
inline constexpr int kOldestReadableVersion = 1;

// What a point's per-rank measurements count, written as the string attribute `unit` of
// each dataset (of the phase_seconds group for its phases). The metrics are per step; these
// are totals over the timed iterations, as measured. outputs/README.md, "Layout".
namespace unit {
inline constexpr const char* attribute = "unit";
inline constexpr const char* seconds_each_iteration = "seconds, each timed iteration";
inline constexpr const char* seconds_summed = "seconds, summed over the timed iterations (iters)";
inline constexpr const char* bytes_peak = "bytes, peak of the point (warm-up included)";
inline constexpr const char* bytes_summed = "bytes, summed over the timed iterations (iters)";
}  // namespace unit

// A point's metrics (/points/<name>/metrics), one constant per key: bench/metrics.cpp
// writes them, the report (report/report.cpp) and the FOM line (app/cli.cpp) read them, so a
// renamed key fails to compile instead of printing n/a. outputs/README.md defines each.
namespace metric_key {
inline constexpr const char* step_seconds = "step_seconds";
inline constexpr const char* iters_per_s = "iters_per_s";
inline constexpr const char* latency_ms = "latency_ms";
inline constexpr const char* tokens_per_s = "tokens_per_s";
inline constexpr const char* tokens_per_s_per_device = "tokens_per_s_per_device";
inline constexpr const char* sequences_per_s = "sequences_per_s";
inline constexpr const char* model_tflop_per_step = "model_tflop_per_step";
inline constexpr const char* tflops_per_device = "tflops_per_device";
inline constexpr const char* tflops_per_device_causal = "tflops_per_device_causal";
inline constexpr const char* peak_tflops_per_device = "peak_tflops_per_device";
inline constexpr const char* mfu = "mfu";
inline constexpr const char* hfu = "hfu";
inline constexpr const char* mfu_causal = "mfu_causal";
inline constexpr const char* hfu_causal = "hfu_causal";
inline constexpr const char* peak_memory_mb = "peak_memory_mb";
inline constexpr const char* bytes_sent_intra_per_device = "bytes_sent_intra_per_device";
inline constexpr const char* bytes_sent_inter_per_device = "bytes_sent_inter_per_device";
inline constexpr const char* world_size = "world_size";
inline constexpr const char* n_params = "n_params";
inline constexpr const char* loss = "loss";
inline constexpr const char* loss_scale = "loss_scale";
inline constexpr const char* overflow_steps = "overflow_steps";
inline constexpr const char* real_tokens_counted = "real_tokens_counted";
// The attention work per rank: (query, key) pairs the mask leaves, per query head, in one
// attention forward over the batch (backends/engine/layout_work.hpp); the busiest rank's,
// the mean, and their ratio.
inline constexpr const char* attention_pairs_max = "attention_pairs_max";
inline constexpr const char* attention_pairs_mean = "attention_pairs_mean";
inline constexpr const char* attention_imbalance = "attention_imbalance";
}  // namespace metric_key

// The terms of a projected step (project/step_model.cpp), each written as the metric
// projected_<term>_s (projected_metric) and read back by the projection's term table.
namespace projected_term {
inline constexpr const char* attention_fwd = "attention_fwd";
inline constexpr const char* attention_bwd = "attention_bwd";
inline constexpr const char* all_to_all = "all_to_all";
inline constexpr const char* gemm = "gemm";
inline constexpr const char* elementwise = "elementwise";
inline constexpr const char* recompute = "recompute";
inline constexpr const char* grad_allreduce = "grad_allreduce";
inline constexpr const char* exposed_intra = "exposed_intra";
inline constexpr const char* exposed_inter = "exposed_inter";
inline constexpr const char* compute = "compute";
inline constexpr const char* memory_bound = "memory_bound";
}  // namespace projected_term

inline std::string projected_metric(const std::string& term) { return "projected_" + term + "_s"; }
// The projection's mean ring step of one layer's walk in a pass (forward, backward): its
// kernel (`compute`), its transfer's time on the link (`transfer`) and the wait the kernel
// did not hide (`exposed`), seconds; as the run's ring timeline records a step.
inline std::string projected_ring_step_metric(const std::string& pass, const std::string& what) {
  return projected_metric("ring_step_" + pass + "_" + what);
}

// The ring steps of one timed iteration (/points/<name>/ring_timeline): one 1-D dataset
// per column, one row per step of each rank; outputs/README.md, "Ring timeline".
namespace ring_timeline {
inline constexpr const char* group = "ring_timeline";
inline constexpr const char* iteration = "iteration";  // attribute
inline constexpr const char* clock = "clock";          // attribute
inline constexpr const char* rank = "rank";
inline constexpr const char* layer = "layer";
inline constexpr const char* pass = "pass";
inline constexpr const char* round = "round";
inline constexpr const char* step = "step";
inline constexpr const char* source = "source";
inline constexpr const char* compute_start = "compute_start";
inline constexpr const char* compute_end = "compute_end";
inline constexpr const char* transfer_posted = "transfer_posted";
inline constexpr const char* transfer_done = "transfer_done";
// The outer-ring transfers of a two-level ring (ring_timeline/outer): one row per transfer
// of each rank, columns rank, layer, pass, round, carries, transfer_posted, transfer_done.
inline constexpr const char* outer = "outer";
inline constexpr const char* carries = "carries";
// The phase scopes of every timed iteration (ring_timeline/phases), present only when
// recorded: one row per scope of each rank, columns rank, iteration, phase, start, end.
inline constexpr const char* phases = "phases";
inline constexpr const char* phase_iteration = "iteration";
inline constexpr const char* phase = "phase";
inline constexpr const char* start = "start";
inline constexpr const char* end = "end";
}  // namespace ring_timeline

// A point's labels (/points/<name>/labels), written by app/labels.cpp and read by the
// report tables and the FOM line. world_size is both a label and a metric.
namespace label_key {
inline constexpr const char* backend = "backend";
inline constexpr const char* ring_type = "ring_type";
inline constexpr const char* mode = "mode";
inline constexpr const char* world_size = "world_size";
inline constexpr const char* seq_len = "seq_len";
inline constexpr const char* batch = "batch";
inline constexpr const char* documents = "documents";  // sequence.documents as the deck spells it
inline constexpr const char* fwd_only = "fwd_only";
inline constexpr const char* causal = "causal";
inline constexpr const char* ulysses_degree = "ulysses_degree";
inline constexpr const char* ring_degree = "ring_degree";
inline constexpr const char* context_size = "context_size";
inline constexpr const char* window_size = "window_size";
inline constexpr const char* intra = "intra";
inline constexpr const char* bwd_comm = "bwd_comm";
inline constexpr const char* variant = "variant";  // the backend's paper's name (BackendInfo::variant)
inline constexpr const char* dtype = "dtype";
inline constexpr const char* device = "device";
inline constexpr const char* comm = "comm";
inline constexpr const char* checkpointing = "checkpointing";
inline constexpr const char* grad_reduce = "grad_reduce";
inline constexpr const char* grad_reduce_dtype = "grad_reduce_dtype";
inline constexpr const char* model = "model";
inline constexpr const char* layers = "layers";
inline constexpr const char* d_model = "d_model";
inline constexpr const char* vocab = "vocab";  // model.vocab: the LM head's, 0 without one
inline constexpr const char* heads = "heads";
inline constexpr const char* kv_heads = "kv_heads";
inline constexpr const char* head_dim = "head_dim";
inline constexpr const char* head_dim_v = "head_dim_v";  // model.head_dim_v resolved (head_dim when 0)
inline constexpr const char* sliding_window = "sliding_window";  // attention.window as the deck spells it
inline constexpr const char* sinks = "sinks";                    // attention.sinks
inline constexpr const char* partials = "partials";
inline constexpr const char* gpu = "gpu";
// Model mode only (the layer stack and its training settings); attention-mode points lack them.
inline constexpr const char* model_mode_only[] = {model,         layers,      d_model,          vocab,
                                                  checkpointing, grad_reduce, grad_reduce_dtype};
// Projected points only (minictx project): "true", the bound, whether the memory fits.
inline constexpr const char* projected = "projected";
inline constexpr const char* bound = "bound";
inline constexpr const char* fits = "fits";
}  // namespace label_key

}  // namespace minictx::schema
