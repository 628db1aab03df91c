#pragma once

// The phases a step times, as the model's PhaseTimer scopes name them; the results file
// keeps them as /points/<name>/phase_seconds (io/results_schema.hpp, outputs/README.md).
namespace minictx::phase {

inline constexpr const char* forward = "forward";
inline constexpr const char* backward = "backward";
inline constexpr const char* attention_fwd = "attention_fwd";
inline constexpr const char* attention_bwd = "attention_bwd";
inline constexpr const char* recompute = "recompute";
inline constexpr const char* grad_allreduce = "grad_allreduce";
// Where the loss is scaled: the check of the summed weight gradients for Inf and NaN.
inline constexpr const char* grad_check = "grad_check";

// Every phase, in the order a step first enters them.
inline constexpr const char* all[] = {forward,       attention_fwd,  backward,  recompute,
                                      attention_bwd, grad_allreduce, grad_check};

}  // namespace minictx::phase
