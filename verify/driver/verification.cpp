#include "driver/verification.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "backends/backend.hpp"
#include "backends/local/local_backend.hpp"
#include "backends/registry.hpp"
#include "core/error.hpp"
#include "core/fault_seam.hpp"
#include "core/phase_timer.hpp"
#include "driver/idle_barrier.hpp"
#include "io/array_dump.hpp"
#include "model/attention_step.hpp"
#include "model/layer_stack.hpp"
#include "reference/reference.hpp"

namespace minictx {
namespace {

using Arrays = std::vector<DumpArray>;

std::vector<double> download(Device& dev, const Tensor& t) {
  std::vector<float> host(size_t(t.numel()));
  dev.download(t, host.data());
  return {host.begin(), host.end()};
}

// Every rank's `local` added up: a gradient each rank holds a share of (the sinks').
std::vector<double> summed_over_ranks(Comm& world, const std::vector<double>& local) {
  std::vector<double> all(local.size() * size_t(world.size()));
  world.gather_doubles(local.data(), all.data(), int64_t(local.size()));
  std::vector<double> sum(local.size(), 0.0);
  for (size_t i = 0; i < all.size(); ++i) sum[i % local.size()] += all[i];
  return sum;
}

// The natural-log LSE of each row, [B, H, L]: the first plane of an LSE tensor
// (Device::alloc_lse), to the precision of fp32.
std::vector<double> lse_values(Device& dev, const Tensor& lse, int64_t batch, int64_t heads) {
  std::vector<double> v = download(dev, lse);
  v.resize(size_t(batch * heads * lse.dim(2)));
  return v;
}

// [B, H, L] per-row vectors to [B, L, H] rows, so they gather like activations.
std::vector<double> heads_last(const std::vector<double>& v, int batch, int heads) {
  const size_t len = v.size() / size_t(batch * heads);
  std::vector<double> out(v.size());
  for (size_t b = 0; b < size_t(batch); ++b)
    for (size_t h = 0; h < size_t(heads); ++h)
      for (size_t i = 0; i < len; ++i) out[(b * len + i) * heads + h] = v[(b * heads + h) * len + i];
  return out;
}

// The global [B, S, width] tensor (real tokens only) from every rank's [B·L, width] rows.
std::vector<double> gather_rows(Comm& world, const std::vector<double>& local, const SequenceLayout& layout,
                                int part, int batch) {
  const int64_t len = layout.local_len(), seq = layout.real_len();
  const int64_t width = int64_t(local.size()) / (batch * len);
  std::vector<double> mine(local);
  mine.push_back(part);
  const size_t n = mine.size();
  std::vector<double> all(n * size_t(world.size()));
  world.gather_doubles(mine.data(), all.data(), int64_t(n));
  std::vector<double> global(size_t(batch * seq * width));
  for (int r = 0; r < world.size(); ++r) {
    const double* src = all.data() + size_t(r) * n;
    const int p = int(src[n - 1]);
    for (int b = 0; b < batch; ++b)
      for (int64_t i = 0; i < len; ++i) {
        const int64_t pos = layout.global_position(p, i);
        if (pos >= seq) continue;
        std::copy_n(src + (b * len + i) * width, width, global.data() + (b * seq + pos) * width);
      }
  }
  return global;
}

}  // namespace

reference::Problem reference_problem(const RunConfig& c) {
  reference::Problem p;
  p.batch = c.sequence.batch;
  p.seq_len = c.sequence.length;
  p.layers = c.model.layers;
  p.d_model = c.model.d_model;
  p.heads = c.model.heads;
  p.kv_heads = c.model.kv_heads;
  p.head_dim = c.model.head_dim;
  p.ffn_hidden = c.model.ffn_hidden;
  p.causal = c.attention.causal;
  p.rms_eps = c.model.rms_eps;
  p.rope_theta = c.model.rope_theta;
  p.seed = c.run.seed;
  p.input_scale = c.run.input_scale;
  p.key_directions = c.run.key_directions;
  if (c.run.mode == Mode::attention) p.inputs_dtype = c.run.dtype;
  p.documents = document_lengths(c.sequence.documents, c.sequence.length, c.sequence.batch);
  p.head_dim_v = c.model.value_dim();
  p.window = c.attention.window.pattern;
  if (c.attention.sinks) p.sinks = reference::generated_sinks(p);
  p.vocab = c.run.mode == Mode::model ? c.model.vocab : 0;
  return p;
}

Fp64Result fp64_result(const RunConfig& cfg) {
  const reference::Problem p = reference_problem(cfg);
  Fp64Result r;
  if (cfg.run.mode == Mode::attention)
    r.attention = reference::attention(p);
  else
    r.model = reference::model(p);
  return r;
}

namespace {

// Every field of reference::Problem, and the mode.
ReferenceCache::Key key_of(const RunConfig& cfg) {
  const reference::Problem p = reference_problem(cfg);
  return {int(cfg.run.mode),
          p.batch,
          p.seq_len,
          p.layers,
          p.d_model,
          p.heads,
          p.kv_heads,
          p.head_dim,
          p.ffn_hidden,
          p.causal,
          p.rms_eps,
          p.rope_theta,
          p.seed,
          p.input_scale,
          p.key_directions,
          p.documents,
          p.vocab,
          p.head_dim_v,
          p.window,
          !p.sinks.empty(),
          int(p.inputs_dtype)};
}

const char* const kHeadGrad = "grads/lm_head";

std::string grad_name(int layer, Weight w) {
  return "grads/layer" + std::to_string(layer) + "/" + weight_name(w);
}
// A layer's sink logits (attention.sinks): not a Weight, present only with sinks.
std::string sinks_grad_name(int layer) { return "grads/layer" + std::to_string(layer) + "/sinks"; }
const char* const kSinksGrad = "grads/sinks";  // attention mode

}  // namespace

std::vector<std::string> verification_tensor_names(const RunConfig& cfg) {
  const bool sinks = cfg.attention.sinks;
  std::vector<std::string> names;
  if (cfg.run.mode == Mode::attention) {
    names = {"outputs/o", "outputs/lse", "grads/q", "grads/k", "grads/v"};
    if (sinks) names.emplace_back(kSinksGrad);
  } else {
    names = {kLossTensor, kOutputTensor, "grads/x"};
    for (int l = 0; l < cfg.model.layers; ++l) {
      for (int w = 0; w < int(Weight::count); ++w) names.push_back(grad_name(l, Weight(w)));
      if (sinks) names.push_back(sinks_grad_name(l));
    }
    if (cfg.model.vocab > 0) names.push_back(kHeadGrad);
  }
  // compare_arrays' further rows: the one-device run's own, then the loss of the run's y.
  const size_t run_rows = names.size();
  if (cfg.run.reference == Reference::fp64 && cfg.run.dtype != DType::f32)
    for (size_t i = 0; i < run_rows; ++i) names.push_back(kOneDevicePrefix + names[i]);
  if (cfg.run.mode == Mode::model && cfg.model.vocab == 0) names.push_back(kLossOfYCheck);
  return names;
}

Arrays run_point(const RunConfig& cfg, Comm& comm, Device& dev) {
  validate_backend(cfg, comm.group_topology());  // the single-device reference: a group of one
  auto backend = find_backend(cfg.attention.backend).create(comm, dev, cfg);
  const SequenceLayout& layout = backend->layout();
  const int part = backend->part(), batch = cfg.sequence.batch;
  const int64_t seq = cfg.sequence.length;
  const int64_t h = cfg.model.heads, kvh = cfg.model.kv_heads, d = cfg.model.head_dim,
                dv = cfg.model.value_dim(), dm = cfg.model.d_model;
  auto rows = [&](const Tensor& t) { return gather_rows(comm, download(dev, t), layout, part, batch); };
  PhaseTimer timer;
  Arrays out;
  if (cfg.run.mode == Mode::attention) {
    AttentionStep step(cfg, dev, *backend, timer);
    step.step(true);
    out.push_back({"outputs/o", {batch, seq, h, dv}, rows(step.o())});
    out.push_back({"outputs/lse",
                   {batch, seq, h},
                   gather_rows(comm, heads_last(lse_values(dev, step.lse(), batch, h), batch, int(h)), layout,
                               part, batch)});
    out.push_back({"grads/q", {batch, seq, h, d}, rows(step.dq())});
    out.push_back({"grads/k", {batch, seq, kvh, d}, rows(step.dk())});
    out.push_back({"grads/v", {batch, seq, kvh, dv}, rows(step.dv())});
    if (cfg.attention.sinks)
      out.push_back({kSinksGrad, {h}, summed_over_ranks(comm, download(dev, step.dsinks()))});
    return out;
  }
  LayerStack model(cfg, dev, comm, *backend, timer);
  const double loss = model.step(true);
  out.push_back({kLossTensor, {1}, {loss}});
  out.push_back({kOutputTensor, {batch, seq, dm}, rows(model.output())});
  // The gradients unscaled (exactly: the scale is a power of two).
  auto unscaled = [&](std::vector<double> g) {
    for (double& x : g) x /= model.grad_scale();
    return g;
  };
  out.push_back({"grads/x", {batch, seq, dm}, unscaled(rows(model.input_grad()))});
  for (int l = 0; l < model.layers(); ++l) {
    for (int w = 0; w < int(Weight::count); ++w) {
      const Tensor& g = model.weight_grad(l, Weight(w));
      out.push_back({grad_name(l, Weight(w)), g.shape(), unscaled(download(dev, g))});
    }
    if (cfg.attention.sinks)
      out.push_back({sinks_grad_name(l), {h}, unscaled(download(dev, model.sinks_grad(l)))});
  }
  if (cfg.model.vocab > 0)
    out.push_back({kHeadGrad, model.head_grad().shape(), unscaled(download(dev, model.head_grad()))});
  return out;
}

Arrays fp64_arrays(const RunConfig& cfg, const Fp64Result& r, const Arrays& like) {
  Arrays ref = like;
  auto set = [&](const std::string& name, const std::vector<double>& v) {
    for (auto& a : ref)
      if (a.name == name) {
        a.data = v;
        return;  // names are unique
      }
  };
  if (cfg.run.mode == Mode::attention) {
    const auto& a = r.attention;
    set("outputs/o", a.o);
    set("outputs/lse", heads_last(a.lse, cfg.sequence.batch, cfg.model.heads));
    set("grads/q", a.dq);
    set("grads/k", a.dk);
    set("grads/v", a.dv);
    set(kSinksGrad, a.dsinks);
    return ref;
  }
  const auto& m = r.model;
  set(kLossTensor, {m.loss});
  set(kOutputTensor, m.y);
  set("grads/x", m.dx);
  for (int l = 0; l < cfg.model.layers; ++l) {
    for (int w = 0; w < int(Weight::count); ++w)
      set(grad_name(l, Weight(w)), m.weight_grads[size_t(l)][size_t(w)]);
    set(sinks_grad_name(l), m.sink_grads[size_t(l)]);
  }
  set(kHeadGrad, m.head_grad);
  return ref;
}

namespace {

// The generated global inputs and weights, for --dump.
Arrays global_inputs(const RunConfig& cfg) {
  const reference::Problem p = reference_problem(cfg);
  Arrays in;
  const int64_t b = p.batch, s = p.seq_len;
  if (!p.documents.empty()) {  // the packing, as each token's document index
    std::vector<double> ids;
    for (int row = 0; row < p.batch; ++row)
      for (int64_t id : reference::document_ids(p, row)) ids.push_back(double(id));
    in.push_back({"inputs/document_ids", {b, s}, ids});
  }
  if (cfg.run.mode == Mode::attention) {  // as the run and the reference had them
    const int dv = p.value_dim();
    reference::AttentionInputs a = reference::attention_inputs(p);
    in.push_back({"inputs/q", {b, s, p.heads, p.head_dim}, std::move(a.q)});
    in.push_back({"inputs/k", {b, s, p.kv_heads, p.head_dim}, std::move(a.k)});
    in.push_back({"inputs/v", {b, s, p.kv_heads, dv}, std::move(a.v)});
    in.push_back({"inputs/dout", {b, s, p.heads, dv}, std::move(a.dout)});
    if (!p.sinks.empty()) in.push_back({"inputs/sinks", {p.heads}, p.sinks[0]});
    return in;
  }
  in.push_back({"inputs/x", {b, s, p.d_model}, reference::make_input(p)});
  if (p.vocab > 0) {
    const std::vector<int64_t> labels = reference::make_labels(p);
    in.push_back({"inputs/labels", {b, s}, {labels.begin(), labels.end()}});
    in.push_back({"weights/lm_head", {p.d_model, p.vocab}, reference::make_head(p)});
  } else {
    in.push_back({"inputs/loss_weights", {b, s, p.d_model}, reference::make_loss_weights(p)});
  }
  const auto weights = reference::make_weights(p);
  for (int l = 0; l < p.layers; ++l) {
    for (int w = 0; w < int(Weight::count); ++w) {
      const auto& v = weights[size_t(l)][size_t(w)];
      std::vector<int64_t> shape = {int64_t(v.size())};
      in.push_back({"weights/layer" + std::to_string(l) + "/" + weight_name(Weight(w)), shape, v});
    }
    if (!p.sinks.empty())
      in.push_back({"weights/layer" + std::to_string(l) + "/sinks", {p.heads}, p.sinks[size_t(l)]});
  }
  return in;
}

// What someone comparing with their own framework needs besides the arrays: the deck and
// every convention the numbers depend on (outputs/README.md, "Verification dumps").
DumpAttributes dump_attributes(const RunConfig& cfg, const std::string& reference,
                               const std::string& deck_yaml) {
  const ModelShape& m = cfg.model;
  DumpAttributes a;
  a.text["description"] = "minictx verify dump: inputs, weights, outputs and gradients of the app (" +
                          cfg.attention.backend + "), and under reference/ those of the " + reference +
                          " reference";
  a.text["deck"] = deck_yaml;
  a.text["mode"] = to_string(cfg.run.mode);
  a.text["backend"] = cfg.attention.backend;
  a.text["reference"] = reference;
  a.text["layout"] = "activations [batch, seq, features] row-major; q, k, v [batch, seq, heads, head_dim]";
  a.text["attention"] =
      "softmax(q k^T / sqrt(head_dim) over the visible keys, and the sink when sinks = 1) v; v and o have "
      "head_dim_v; causal by global position when causal = 1; GQA: query head h uses kv head h / (heads / "
      "kv_heads); lse = natural log-sum-exp per row (the sink's term included), [batch, seq, heads]";
  if (!cfg.attention.window.none()) {
    a.text["window"] =
        "sliding window of w tokens (window_per_layer, repeated over the layers; attention mode: its "
        "first; 0 = none): the query at position i sees keys j with i - j < w, and j - i < w too when "
        "causal = 0";
    a.text["window_per_layer"] = to_text(cfg.attention.window);
  }
  if (cfg.attention.sinks)
    a.text["sinks"] =
        "a sink logit s_h per query head (inputs/sinks; model mode: weights/layer<l>/sinks) adds e^s_h "
        "to the denominator of head h's softmax once per row; grads/...sinks is its gradient";
  if (!cfg.sequence.documents.none()) {
    a.text["documents"] =
        "packed documents: inputs/document_ids [batch, seq] numbers each token's document from 0; a query "
        "sees only keys of its own document (and, when causal, at or before it); RoPE positions restart at 0 "
        "at each document's first token";
    a.text["document_lengths"] = to_text(cfg.sequence.documents);
  }
  if (cfg.run.mode == Mode::model) {
    a.text["weights"] = "y = x @ W, W stored [in, out]; RMSNorm gains [d_model]";
    a.text["rope"] =
        "half-split (rotate_half, as Hugging Face Llama): each head's pair (i, i + head_dim/2) is rotated "
        "by pos * rope_theta^(-2i/head_dim), pos = the token's 0-based index " +
        std::string(cfg.sequence.documents.none()
                        ? "in the sequence"
                        : "in its document (restarting at 0 at each document's first token)");
    a.text["rms_norm"] = "x / sqrt(mean(x^2) + rms_eps) * g";
    a.text["layer"] =
        "h = x + wo(attention(rope(wq(norm(x))), rope(wk(norm(x))), wv(norm(x)))); "
        "y = h + w2(silu(w1(norm(h))) * w3(norm(h))); norm(x) uses g_attn, norm(h) g_mlp";
    a.text["loss"] =
        cfg.model.vocab > 0
            ? "mean over the batch * seq tokens of cross_entropy(y @ weights/lm_head, inputs/labels): "
              "logsumexp of a token's logits minus its label's logit, y the last layer's output (no final "
              "norm)"
            : "sum(inputs/loss_weights * y) / (batch * seq), y the last layer's output (no final norm)";
  } else {
    a.text["loss"] = "attention mode: the gradients are those of sum(inputs/dout * o)";
  }
  a.numbers["batch"] = double(cfg.sequence.batch);
  a.numbers["seq_len"] = double(cfg.sequence.length);
  a.numbers["layers"] = m.layers;
  a.numbers["d_model"] = m.d_model;
  a.numbers["heads"] = m.heads;
  a.numbers["kv_heads"] = m.kv_heads;
  a.numbers["head_dim"] = m.head_dim;
  a.numbers["head_dim_v"] = m.value_dim();
  a.numbers["ffn_hidden"] = m.ffn_hidden;
  a.numbers["vocab"] = cfg.run.mode == Mode::model ? m.vocab : 0;
  a.numbers["rms_eps"] = m.rms_eps;
  a.numbers["rope_theta"] = m.rope_theta;
  a.numbers["causal"] = cfg.attention.causal ? 1 : 0;
  a.numbers["seed"] = double(cfg.run.seed);
  a.numbers["input_scale"] = cfg.run.input_scale;
  return a;
}

// The same step with the local backend, by rank 0 alone on the whole sequence; empty on
// the other ranks.
Arrays run_single_device(const RunConfig& cfg, Comm& world, Device& dev) {
  auto self = world.split(world.rank() == 0 ? 0 : 1, world.rank());
  if (world.rank() != 0) return {};
  RunConfig single = cfg;
  single.attention.backend = local_backend_info().name;
  return run_point(single, *self, dev);
}

}  // namespace

void ReferenceCache::expect(const RunConfig& cfg) { ++entries_[key_of(cfg)].askers; }

std::shared_ptr<const Fp64Result> ReferenceCache::take(const RunConfig& cfg) {
  const auto it = entries_.find(key_of(cfg));
  if (it == entries_.end()) return std::make_shared<const Fp64Result>(fp64_result(cfg));  // not expected
  Entry& e = it->second;
  auto result = e.result ? e.result : std::make_shared<const Fp64Result>(fp64_result(cfg));
  if (--e.askers > 0)
    e.result = result;
  else
    entries_.erase(it);
  return result;
}

Verification verify_point(const RunConfig& cfg, Comm& world, Device& device, Reference reference,
                          const std::string& dump_path, const std::string& deck_yaml,
                          ReferenceCache* references) {
  Verification v;
  v.reference = to_string(reference);
  Arrays got = run_point(cfg, world, device);
  if (fault_seam::fires(fault_seam::Stage::zero_loss))  // the test seam: a loss verify must refuse
    for (DumpArray& a : got)
      if (a.name == kLossTensor) a.data = {0.0};
  // A 16-bit run is also compared with the single-device run of its dtype, which tells
  // the error of distribution apart from the error of 16 bits.
  const bool single_too = reference == Reference::fp64 && cfg.run.dtype != DType::f32;
  Arrays ref, single;
  // Rank 0 alone runs the single-device step: if it is refused (PointRefused), the other
  // ranks learn so with the verdict below and all throw it.
  std::string refused;
  try {
    if (reference == Reference::single_device) {
      ref = run_single_device(cfg, world, device);
    } else if (single_too) {
      single = run_single_device(cfg, world, device);
    }
  } catch (const PointRefused& e) {
    refused = std::string("the single-device run: ") + e.what();
  }
  if (reference == Reference::fp64 && world.rank() == 0 && refused.empty()) {
    const auto fp64 =
        references ? references->take(cfg) : std::make_shared<const Fp64Result>(fp64_result(cfg));
    ref = fp64_arrays(cfg, *fp64, got);
  }
  double failures = 0;
  if (world.rank() == 0 && refused.empty()) {
    v.rows = compare_arrays(cfg, got, ref, single_too ? &single : nullptr);
    failures = all_pass(v.rows) ? 0 : 1;
    if (!dump_path.empty()) {
      Arrays dump = global_inputs(cfg);
      // A weight keeps the shape of its gradient, [in, out] for y = x · W.
      for (auto& w : dump)
        if (w.name.rfind("weights/", 0) == 0)
          for (const auto& g : got)
            if (g.name == "grads/" + w.name.substr(8)) w.shape = g.shape;
      for (const auto& a : got) dump.push_back(a);
      for (auto a : ref) {
        a.name = "reference/" + a.name;
        dump.push_back(std::move(a));
      }
      write_array_dump(dump_path, dump, dump_attributes(cfg, v.reference, deck_yaml));
    }
  }
  idle_barrier();  // the other ranks sleep until rank 0 has its verdict
  double verdict[2] = {failures, refused.empty() ? 0.0 : 1.0};
  world.all_reduce_sum(verdict, 2);
  if (verdict[1] > 0) throw PointRefused(refused.empty() ? "refused on rank 0" : refused);
  v.valid = verdict[0] == 0;
  return v;
}

}  // namespace minictx
