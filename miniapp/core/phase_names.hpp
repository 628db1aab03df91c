#pragma once

// The phases a step times, as the model's PhaseTimer scopes name them; the results file
// keeps them as /points/<name>/phase_seconds (io/results_schema.hpp, outputs/README.md).
namespace minictx::phase {

inline constexpr const char* forward = "forward";
inline constexpr const char* backward = "backward";
inline constexpr const char* attention_fwd = "attention_fwd";
inline constexpr const char* attention_bwd = "attention_bwd";
// The layer stack's GEMMs (projections, MLP, LM head): those of the forward, inside
// forward and recompute as attention_fwd is; those of the backward (dgrad and wgrad),
// inside backward, and inside forward for the LM head's, which the forward runs.
inline constexpr const char* gemm_fwd = "gemm_fwd";
inline constexpr const char* gemm_bwd = "gemm_bwd";
inline constexpr const char* recompute = "recompute";
inline constexpr const char* grad_allreduce = "grad_allreduce";
// Where the loss is scaled: the check of the summed weight gradients for Inf and NaN.
inline constexpr const char* grad_check = "grad_check";

// Every phase, in the order a step first enters them.
inline constexpr const char* all[] = {forward,  gemm_fwd,      attention_fwd,  backward,  recompute,
                                      gemm_bwd, attention_bwd, grad_allreduce, grad_check};

}  // namespace minictx::phase
