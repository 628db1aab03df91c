#include "project/step_model.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "core/phase_names.hpp"
#include "core/ring_timeline.hpp"
#include "io/results_schema.hpp"
#include "model/memory_estimate.hpp"
#include "project/attention_plan.hpp"

namespace minictx {
namespace {

namespace ph = phase;
namespace pt = schema::projected_term;

// The GEMMs of one layer on `rows` rows (LayerStack: wq, wk, wv, wo, w1, w3, w2); the
// backward runs two of the same size per GEMM (the input and the weight gradient).
Cost layer_gemms(const ModelShape& m, double rows, bool backward, const KernelRates& rates) {
  const double d = m.d_model, q = double(m.heads) * m.head_dim, k = double(m.kv_heads) * m.head_dim,
               v = double(m.kv_heads) * m.value_dim(), o = double(m.heads) * m.value_dim(), f = m.ffn_hidden;
  double s = rates.gemm_seconds(rows, q, d) + rates.gemm_seconds(rows, k, d) +
             rates.gemm_seconds(rows, v, d) + rates.gemm_seconds(rows, d, o) +
             2 * rates.gemm_seconds(rows, f, d) + rates.gemm_seconds(rows, d, f);
  return cost_of(Bound::compute, backward ? 2 * s : s);
}

// The LM head (model.vocab) as LayerStack runs it, all in the forward: per chunk the
// logits, dL/dy and the head's gradient (three GEMMs of rows × vocab × d_model in all
// with the backward, one without), and the cross-entropy reading and writing the logits
// twice, as two copies of rows × vocab.
// One of the head's GEMMs (none without a head).
double head_gemm_seconds(const ModelShape& m, double rows, const KernelRates& rates) {
  return m.vocab == 0 ? 0 : rates.gemm_seconds(rows, m.vocab, m.d_model);
}

Cost head_cost(const ModelShape& m, double rows, bool backward, const KernelRates& rates) {
  if (m.vocab == 0) return {};
  Cost c = cost_of(Bound::compute, head_gemm_seconds(m, rows, rates) * (backward ? 3 : 1));
  c += cost_of(Bound::memory, 2 * rates.elementwise_seconds({Elementwise::copy, rows, double(m.vocab)}));
  return c;
}

// The element-wise kernels of one layer as LayerStack calls them (layer_elementwise), each
// at its rate.
Cost elementwise_cost(const ModelShape& m, double rows, bool backward, const KernelRates& rates) {
  double s = 0;
  for (const ElementwiseCall& c : layer_elementwise(m, rows, backward)) s += rates.elementwise_seconds(c);
  return cost_of(Bound::memory, s);
}

// The elements of each weight of one layer (LayerStack's Weight order), and its sink
// logits (none without attention.sinks).
std::array<double, 10> weight_elements(const RunConfig& cfg) {
  const ModelShape& m = cfg.model;
  const double d = m.d_model, q = double(m.heads) * m.head_dim, k = double(m.kv_heads) * m.head_dim,
               v = double(m.kv_heads) * m.value_dim(), o = double(m.heads) * m.value_dim(), f = m.ffn_hidden;
  return {d, d, d * q, d * k, d * v, o * d, d * f, d * f, f * d, cfg.attention.sinks ? double(m.heads) : 0};
}

// The backward's first work: every weight gradient of the layer set to zero, one fill each,
// in the gradients' dtype (fp32 main gradients write twice a 16-bit run's element bytes).
Cost zero_gradients(const RunConfig& cfg, const KernelRates& rates) {
  const double widen = element_bytes(cfg.grad_dtype()) / rates.element_bytes();
  double s = 0;
  for (double n : weight_elements(cfg)) s += rates.elementwise_seconds({Elementwise::fill, 1, n * widen});
  return cost_of(Bound::memory, s);
}

// Where the loss is scaled, the check of one layer's summed weight gradients for Inf and
// NaN (LayerStack::gradients_finite): one dot product reading each gradient once.
Cost gradient_check(const RunConfig& cfg, const KernelRates& rates) {
  if (!cfg.checks_gradients()) return {};
  double s = 0;
  for (double n : weight_elements(cfg)) s += rates.read_seconds(n * element_bytes(cfg.grad_dtype()));
  return cost_of(Bound::memory, s);
}

// The gradient sums LayerStack makes, one grouped sum per layer: a layer's gradients are
// one grouped call (Comm::all_reduce_sum_start of a buffer list), whose reductions
// progress together, one latency chain, in the gradients' dtype (run.grad_reduce_dtype).
// After the backward, all of them are exposed; overlapped, each starts when its layer's
// backward (`layer_backward_s`) ends and moves under the backward of the layers below as
// far as the link overlaps a kernel, so at least the last layer's sum stays exposed.
Cost gradient_sums(const RunConfig& cfg, const Topology& topology, double layer_backward_s,
                   const LinkRates& links) {
  const double layers = cfg.model.layers;
  const Cost one = all_reduce_cost(double(cfg.model.n_params(cfg.attention.sinks)) / layers,
                                   double(element_bytes(cfg.grad_dtype())), 1, topology, links);
  Cost all = one.times(layers);
  const double total = all.seconds();
  if (cfg.run.grad_reduce == GradReduce::after_backward || total <= 0) return all;
  const double overlap = one.inter > 0 ? links.inter.overlap : links.intra.overlap;
  const double exposed = std::max(one.seconds(), total - overlap * (layers - 1) * layer_backward_s);
  all.intra *= exposed / total;
  all.inter *= exposed / total;
  return all;
}

// One layer's attention call in a pass, the mean over the layers (their sliding windows
// may differ; each distinct window is projected once; attention mode: layer 0's), and in
// `ring_step` (if given) the mean step of its ring walk, over the layers alike.
Cost layer_attention(const RunConfig& cfg, const Topology& topology, const AttentionPlan& plan,
                     AttentionPass pass, const KernelRates& rates, const LinkRates& links,
                     RingWalkModel::StepTimes* ring_step = nullptr) {
  struct Projected {
    Cost cost;
    RingWalkModel::StepTimes step;
  };
  const int layers = cfg.run.mode == Mode::attention ? 1 : cfg.model.layers;
  std::map<int64_t, Projected> by_window;
  Cost sum;
  RingWalkModel::StepTimes steps;
  for (int l = 0; l < layers; ++l) {
    auto [at, made] = by_window.try_emplace(cfg.attention.window.of_layer(l));
    Projected& p = at->second;
    if (made) p.cost = attention_cost(cfg, topology, plan, l, pass, rates, links, &p.step);
    sum += p.cost;
    steps.compute += p.step.compute / layers;
    steps.transfer += p.step.transfer / layers;
    steps.exposed += p.step.exposed / layers;
  }
  if (ring_step) *ring_step = steps;
  return sum.times(1.0 / layers);
}

// One layer's attention in a pass, and the mean step of its ring walk under the pass's name
// in `ring_steps` (none where no ring walks: the all-gather scheme, a context of one rank).
Cost pass_attention(const RunConfig& cfg, const Topology& topology, const AttentionPlan& plan, WalkPass pass,
                    const KernelRates& rates, const LinkRates& links,
                    std::map<std::string, RingWalkModel::StepTimes>& ring_steps) {
  RingWalkModel::StepTimes step;
  const AttentionPass which = pass == WalkPass::forward ? AttentionPass::forward : AttentionPass::backward;
  const Cost c = layer_attention(cfg, topology, plan, which, rates, links, &step);
  if (plan.scheme != AttentionScheme::allgather && plan.degrees.context > 1)
    ring_steps[to_string(pass)] = step;
  return c;
}

// A model-mode step: the layers' GEMMs, element-wise kernels and attention, the LM head,
// the recompute, the gradient sums and checks, by phase and by term.
void project_model(const RunConfig& cfg, const Topology& topology, const AttentionPlan& plan,
                   const KernelRates& rates, const LinkRates& links, const Cost& attn_fwd,
                   const Cost& attn_bwd, StepProjection& p) {
  const bool backward = !cfg.run.fwd_only;
  const ModelShape& m = cfg.model;
  const double layers = m.layers;
  const double rows = double(cfg.sequence.batch) * double(plan.layout.local_len());
  const Cost gemm_f = layer_gemms(m, rows, false, rates), gemm_b = layer_gemms(m, rows, true, rates);
  const Cost ew_f = elementwise_cost(m, rows, false, rates);
  Cost ew_b = elementwise_cost(m, rows, true, rates);
  ew_b += zero_gradients(cfg, rates);
  Cost forward_layer = gemm_f;
  forward_layer += ew_f;
  const Cost loss = all_reduce_cost(1, 8, 1, topology, links);  // the loss, one double

  const Cost head = head_cost(m, rows, backward, rates);
  Cost forward = forward_layer.times(layers);
  forward += attn_fwd.times(layers);
  forward += head;
  forward += loss;

  Cost recompute;
  const bool recomputes = backward && cfg.run.checkpointing != Checkpointing::none;
  if (recomputes) {
    recompute = forward_layer;
    if (cfg.run.checkpointing == Checkpointing::full) recompute += attn_fwd;
    if (cfg.run.checkpointing == Checkpointing::selective_half)
      recompute += layer_attention(cfg, topology, plan, AttentionPass::forward_query_prefix, rates, links);
    recompute = recompute.times(layers);
  }
  Cost grads, check;
  Cost backward_phase = recompute;
  if (backward) {
    Cost layer = gemm_b;
    layer += ew_b;
    layer += attn_bwd;
    backward_phase += layer.times(layers);
    grads = gradient_sums(cfg, topology, layer.seconds() + recompute.seconds() / layers, links);
    backward_phase += grads;
    check = gradient_check(cfg, rates).times(layers);
    backward_phase += check;
  }
  p.total = forward;
  p.total += backward_phase;
  p.phases = {
      {ph::forward, forward.seconds()},
      {ph::backward, backward_phase.seconds()},
      {ph::attention_fwd, layers * attn_fwd.seconds()},
      {ph::attention_bwd, layers * attn_bwd.seconds()},
      {ph::recompute, recompute.seconds()},
      {ph::grad_allreduce, grads.seconds()},
      {ph::grad_check, check.seconds()},
      // The GEMMs of the forward, recompute's again; the backward's; the head's
      // (one of its three in the forward's).
      {ph::gemm_fwd, gemm_f.seconds() * layers * (recomputes ? 2 : 1) + head_gemm_seconds(m, rows, rates)},
      {ph::gemm_bwd, backward ? gemm_b.seconds() * layers + 2 * head_gemm_seconds(m, rows, rates) : 0}};
  p.terms = {
      {pt::attention_fwd, layers * attn_fwd.seconds()},
      {pt::attention_bwd, layers * attn_bwd.seconds()},
      {pt::gemm, gemm_f.seconds() * layers + (backward ? gemm_b.seconds() * layers : 0) + head.compute},
      {pt::elementwise,
       ew_f.seconds() * layers + (backward ? ew_b.seconds() * layers : 0) + check.seconds() + head.memory},
      {pt::recompute, recompute.seconds()},
      {pt::grad_allreduce, grads.seconds()}};
}

}  // namespace

StepProjection project_step(const RunConfig& cfg, const Topology& topology, const KernelRates& rates,
                            const LinkRates& links, double memory_capacity_bytes) {
  StepProjection p;
  const AttentionPlan plan = attention_plan(cfg, topology);
  const bool backward = !cfg.run.fwd_only;
  const Cost attn_fwd = pass_attention(cfg, topology, plan, WalkPass::forward, rates, links, p.ring_steps);
  const Cost attn_bwd =
      backward ? pass_attention(cfg, topology, plan, WalkPass::backward, rates, links, p.ring_steps) : Cost{};
  p.memory_bytes = double(estimate_memory_bytes(cfg, topology));
  p.memory_capacity_bytes = memory_capacity_bytes;

  if (cfg.run.mode == Mode::attention) {
    p.total = attn_fwd;
    p.total += attn_bwd;
    p.phases = {{ph::attention_fwd, attn_fwd.seconds()}, {ph::attention_bwd, attn_bwd.seconds()}};
    p.terms = {{pt::attention_fwd, attn_fwd.seconds()}, {pt::attention_bwd, attn_bwd.seconds()}};
  } else {
    project_model(cfg, topology, plan, rates, links, attn_fwd, attn_bwd, p);
  }
  p.terms[pt::all_to_all] = p.total.all_to_all;
  p.terms[pt::exposed_intra] = p.total.intra;
  p.terms[pt::exposed_inter] = p.total.inter;
  p.terms[pt::compute] = p.total.compute;
  p.terms[pt::memory_bound] = p.total.memory;
  p.bound = to_string(p.total.bound());
  p.fits = p.memory_bytes <= memory_capacity_bytes;
  return p;
}

}  // namespace minictx
