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

// Σ over batch rows and documents of length²: B·S² without packed documents, fewer with
// them (a query sees only its own document). Every attention term below counts these
// (query, key) pairs, halved when causal.
double attention_pairs(const RunConfig&);

// What packed documents leave of the attention: the share of the (query, key) pairs of
// the sequence that they keep (attention_pairs over B·S²; 1 without documents), and the
// length of the document the average token sits in (Σ len² / Σ len; S without documents),
// the longest piece a kernel call sees once a block is split by document.
struct DocumentWork {
  double pair_share = 1;
  double token_length = 0;
};
DocumentWork document_work(const RunConfig&);

// Attention op: fwd = 4·pairs·H·D, halved when causal; bwd = 2.5× fwd.
double attention_fwd_flops(const RunConfig&);

// MPT: flops_per_seq = 2·n_params·S; attn_flops_per_seq = layers·2·2·d_model·S² (pairs / B
// with packed documents);
// model = 3·(both), hardware = 4·(both) with full checkpointing, 4·dense + 3·attention
// with selective checkpointing (attention is not recomputed), 4·dense + 3.5·attention
// with selective_half (half the queries recomputed; 3.25 in the causal-exact count),
// 3·(both) without.
StepFlops step_flops(const RunConfig&);

}  // namespace minictx
