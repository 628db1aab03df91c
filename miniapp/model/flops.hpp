#pragma once
#include "config/run_config.hpp"

namespace minictx {

// FLOPs of one step, by the conventions the seed tables use (docs/user-guide.md, "Metrics").
struct StepFlops {
  double model = 0;         // MFU numerator: MPT formula, 3× (fwd+bwd) or 1× (fwd_only)
  double hardware = 0;      // HFU numerator: counts the recompute of checkpointing
  double model_causal = 0;  // the same with the attention term halved (causal-exact)
  double hardware_causal = 0;
  double attention = 0;  // FlashAttention convention (attention mode)
};

// Σ over batch rows and documents of the (query, key) pairs less than `window` tokens apart:
// length² per document without a window (0), (2w − 1)·length − w·(w − 1) with one shorter
// than it. B·S² without packed documents or a window, fewer with them (a query sees only
// its own document and window). Every attention term below counts these pairs, halved
// when causal (the diagonal's pairs counted as halves, so that a window as long as the
// sequence counts what none does).
double attention_pairs(const RunConfig&, int64_t window = 0);
// The pairs of the attention calls of a step: layer 0's in attention mode, the sum over
// the layers (each with its own window) in model mode.
double step_attention_pairs(const RunConfig&);

// What packed documents leave of the attention: the share of the (query, key) pairs of
// the sequence that they keep (attention_pairs over B·S²; 1 without documents), and the
// length of the document the average token sits in (Σ len² / Σ len; S without documents),
// the longest piece a kernel call sees once a block is split by document.
struct DocumentWork {
  double pair_share = 1;
  double token_length = 0;
};
DocumentWork document_work(const RunConfig&);

// Attention op: fwd = 2·pairs·H·(D + Dv) (q·kᵀ and p·v; 4·pairs·H·D when Dv = D), halved
// when causal; bwd = 2.5× fwd. The sinks' O(S·H) is not counted.
double attention_fwd_flops(const RunConfig&);

// MPT: flops_per_seq = 2·n_params·S; attn_flops_per_seq = layers·2·2·d_model·S² (pairs / B
// with packed documents, the sum over the layers of their windows' pairs; times
// (D + Dv)/2D with MLA head shapes);
// model = 3·(both), hardware = 4·(both) with full checkpointing, 4·dense + 3·attention
// with selective checkpointing (attention is not recomputed), 4·dense + 3.5·attention
// with selective_half (half the queries recomputed; 3.25 in the causal-exact count),
// 3·(both) without.
StepFlops step_flops(const RunConfig&);

}  // namespace minictx
