#pragma once
#include <string>
#include <vector>

#include "io/results.hpp"
#include "report/table.hpp"

namespace minictx {

// Column sets: each turns points into a Table, one row per point in the given order.
// Cells come from PointResult::labels and ::metrics; a missing one prints "n/a", never a
// made-up number. Conventions: metrics mfu/hfu are fractions, printed as percentages
// (42.57 means 42.57 %); *_mb metrics are already MB; bytes metrics print as MB with
// 1 MB = 2^20 bytes; fwd_only prints True/False as in the seeds.

// The default `minictx report` / end-of-run table: point | backend | ring_type | mode |
// world | seq_len | batch | fwd_only | iters/s | latency(ms) | tokens/s | tokens/s/device |
// TFLOPS/device | MFU (MPT, full mask) | HFU (MPT, full mask) | peak MB/device | sent MB/device (intra) |
// sent MB/device (inter) | verdict ("skipped: <reason>" for a skipped point).
Table summary_table(const std::vector<PointResult>& points);

// The USP seed table: ring type | seq_len | ulysses_degree | ring_degree | fwd_only |
// throughput(iters/s) | latency(ms/iter) | peak memory(MB/device) | speed(TFLOPS).
Table usp_table(const std::vector<PointResult>& points);

// The LoongTrain double-ring seed table: as usp_table with context_size | window_size in
// place of the two degrees.
Table double_ring_table(const std::vector<PointResult>& points);

// The MPT benchmark table (llm-foundry): Model | SeqLen (T) | # GPUs | GPU | MFU (MPT, full
// mask) | HFU (MPT, full mask) |
// Model TFLOP | MicroBatchSize | GradAccum | GlobalBatchSize | Throughput (S/s) |
// Throughput (T/s) | Throughput (T/s/GPU) | GlobalBatchSize (T) | Precision | MP Mode |
// Sharding Strategy | Activation Checkpointing | Activation CPUOffload | NumParams.
// Model TFLOP is the MFU numerator in TFLOP/s per device (the seed prints the same value
// as the mantissa of E+14 FLOP/s); GradAccum is 1 and the global batch is the micro batch
// (one replica, no accumulation); MP Mode, Sharding Strategy and Activation CPUOffload
// are FSDP settings minictx does not model: "n/a".
Table mpt_table(const std::vector<PointResult>& points);

// A point's name in a table of variants: its `variant` label, the name the backend's paper
// gives the configuration (burst's are BurstAttention's (A)-(D), backends/burst), or else
// "backend (ring_type)".
std::string point_variant(const PointResult& p);

// The BurstAttention figures as a table: Model | SeqLen (T) | # GPUs | GPU | Variant | MFU (causal) |
// Tokens/s, one row per point, grouped by setting (model, seq_len, world size) in order
// of first appearance, variants (A)..(D) first inside a setting.
Table burst_table(const std::vector<PointResult>& points);

// verify's errors, one row per point: world | backend | ring_type | mode | dtype | partials |
// layers | documents, the worst max and RMS relative error of the outputs and of the gradients
// against the reference, the worst RMS relative error of a 16-bit run's outputs and
// gradients against the single-device run of its dtype (RMS: a different summation order
// flips one 16-bit ulp here and there, which sets the max whatever the distribution),
// and the verdict.
Table errors_table(const std::vector<PointResult>& points);

// The attention work per rank, one row per point: world | backend | ring_type | seq_len |
// batch | documents | the busiest rank's (query, key) pairs and the mean | their ratio, the
// imbalance | latency | verdict.
Table balance_table(const std::vector<PointResult>& points);

// The column sets by name, one entry each: `report --columns`, its help text and
// `minictx list` read this table.
struct ColumnSet {
  const char* name;
  const char* summary;  // one line for `minictx list`
  Table (*build)(const std::vector<PointResult>& points);
};
const std::vector<ColumnSet>& column_sets();
Table make_table(const std::string& name, const std::vector<PointResult>& points);  // InputError if unknown

}  // namespace minictx
