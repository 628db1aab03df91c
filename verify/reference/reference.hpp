#pragma once
// Independent fp64 golden model of minictx: written from docs/design.md ("The model") with
// plain loops (materialised S×S attention, no tiling, no BLAS) and sharing nothing with
// the app but the data generator, so that agreement between the two means something.
#include <cstdint>
#include <vector>

#include "core/dtype.hpp"
#include "core/synthetic_data.hpp"

namespace minictx::reference {

struct Problem {
  int batch = 1;
  int64_t seq_len = 0;  // real tokens (no padding here)
  int layers = 1, d_model = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn_hidden = 0;
  bool causal = true;
  double rms_eps = 1e-5, rope_theta = 10000.0;
  uint64_t seed = 0;
  double input_scale = 1.0;  // of the generated inputs: input_value()
  int key_directions = 0;    // attention mode's keys near shared directions: attention_input()
  // Attention mode: the dtype the run stores q, k, v and dO in. In bf16 or fp16 they are
  // the generated values rounded to it (to fp32 first, as the run uploads them), so that
  // the reference computes, in fp64, the problem the run was given.
  DType inputs_dtype = DType::f32;
  // Packed documents: the lengths of each batch row's documents, in order (empty: each
  // sequence is one document). A query sees only keys of its own document, and RoPE
  // positions count from each document's first token.
  std::vector<std::vector<int64_t>> documents;
  int head_dim_v = 0;  // of values and the attention output; 0: head_dim
  // Sliding windows of layers 0, 1, ..., repeated over the layers (attention mode: the
  // first); 0 or none: the layer sees every key its mask allows. A query at position i
  // sees keys j with i − j < w, and j − i < w as well without the causal mask.
  std::vector<int64_t> window;
  // Sink logits [layer][H] (attention mode: one layer), each in the denominator of its
  // head's softmax; empty: none.
  std::vector<std::vector<double>> sinks;
  // The LM head (0: none): the loss is then the mean over the tokens of the cross-entropy
  // of the logits y·W_head [B·S, vocab] against generated labels, not Σ c∘y / (B·S).
  int64_t vocab = 0;

  int value_dim() const { return head_dim_v > 0 ? head_dim_v : head_dim; }
  int64_t window_of(int layer) const { return window.empty() ? 0 : window[size_t(layer) % window.size()]; }
};

struct AttentionResult {
  // o [B,S,H,Dv]; dq [B,S,H,D]; lse [B,H,S]; dk [B,S,Hkv,D]; dv [B,S,Hkv,Dv];
  // dsinks [H] with sinks.
  std::vector<double> o, lse, dq, dk, dv, dsinks;
};

// Per layer, per int(Weight), flattened like the weight ([in, out] row-major; gains [d]).
using Weights = std::vector<std::vector<std::vector<double>>>;

struct ModelResult {
  double loss = 0;
  std::vector<double> y;                        // final layer output [B,S,d_model]
  std::vector<double> dx;                       // dLoss/dx for the model input [B,S,d_model]
  Weights weight_grads;                         // [layer][int(Weight)] flattened like the weight
  std::vector<std::vector<double>> sink_grads;  // [layer][H] with sinks
  std::vector<double> head_grad;  // the LM head's weight gradient [d_model, vocab]; empty without one
};

struct AttentionInputs {
  std::vector<double> q, k, v, dout;  // q, dout [B,S,H,D]; k, v [B,S,Hkv,D]
};

// Attention mode: q, k, v, dO from tensor_id::attn_q/k/v/do (attention_input() at
// p.input_scale and p.key_directions), stored in p.inputs_dtype.
AttentionInputs attention_inputs(const Problem&);
// x to the nearest value of a 16-bit dtype (bf16, fp16), ties to even, with its subnormals;
// beyond fp16's range, ±inf. fp32: x as it is.
double stored_in(DType dtype, double x);
// Attention mode on attention_inputs(), positions 0..S-1: forward and backward with dO as
// the upstream gradient (the "loss" is Σ dO∘O).
AttentionResult attention(const Problem&);
// Full layer stack, forward and backward of L = (1/(B·S)) Σ c∘y, or with p.vocab the mean
// cross-entropy of the LM head's logits.
ModelResult model(const Problem&);

// Which document each token of batch row b belongs to, numbered from 0 (all 0 without
// documents).
std::vector<int64_t> document_ids(const Problem&, int b);

// Building blocks, exposed for tests and the finite-difference checks.
// positions: global position of each sequence row (size S), shared by every batch entry.
// attention_forward fills o and lse only; attention_on also runs the backward with dout.
// `layer` picks the window and the sink logits.
AttentionResult attention_forward(const Problem&, const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, const std::vector<int64_t>& positions,
                                  int layer = 0);
AttentionResult attention_on(const Problem&, const std::vector<double>& q, const std::vector<double>& k,
                             const std::vector<double>& v, const std::vector<double>& dout,
                             const std::vector<int64_t>& positions, int layer = 0);
// The sink logits [H] of `layer`; empty without sinks.
std::vector<double> sink_logits(const Problem&, int layer);
// Every layer's sink logits from the generator (sink_value), for Problem::sinks.
std::vector<std::vector<double>> generated_sinks(const Problem&);
// head: the LM head's weight [d_model, vocab] where p.vocab > 0 (empty: make_head's).
double model_loss(const Problem&, const Weights& weights, const std::vector<double>& x,
                  const std::vector<double>& head = {});
Weights make_weights(const Problem&);                   // from weight_value()
std::vector<double> make_input(const Problem&);         // x [B,S,d] from tensor_id::input_x, scaled
std::vector<double> make_loss_weights(const Problem&);  // c [B,S,d] from tensor_id::loss_weight
std::vector<double> make_head(const Problem&);          // W_head [d, vocab] from lm_head_value()
std::vector<int64_t> make_labels(const Problem&);       // [B,S] from label_value()

}  // namespace minictx::reference
