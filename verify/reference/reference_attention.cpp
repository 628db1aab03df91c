// Materialised softmax attention with GQA: each (batch, head) builds its full S×S
// probability matrix, so the result is the textbook formula with no online-softmax or
// tiling that could share a bug with the app's kernels.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "reference/reference.hpp"

namespace minictx::reference {
namespace {

// Row-major [B, S, heads, D] indexing for q/dO/o (heads = H) and k/v (heads = Hkv), D the
// tensor's head dim (the value dim for v, o and dO).
struct Layout {
  int64_t S, D;
  size_t at(int b, int64_t s, int heads, int h) const { return size_t(((b * S + s) * heads + h) * D); }
};

void check_shapes(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                  const std::vector<double>& v, const std::vector<int64_t>& positions) {
  require(p.heads > 0 && p.kv_heads > 0 && p.heads % p.kv_heads == 0,
          "reference: heads must be a positive multiple of kv_heads");
  const size_t rows = size_t(p.batch) * p.seq_len;
  require(q.size() == rows * p.heads * p.head_dim, "reference: q has the wrong size");
  require(k.size() == rows * p.kv_heads * p.head_dim, "reference: k has the wrong size");
  require(v.size() == rows * p.kv_heads * p.value_dim(), "reference: v has the wrong size");
  require(positions.size() == size_t(p.seq_len),
          "reference: positions needs one entry per sequence row, got " + std::to_string(positions.size()));
}

// Whether query i sees key j: not later (causal), the same document, and within the
// layer's window of it (either side without the causal mask).
bool visible(const Problem& p, int64_t window, const std::vector<int64_t>& pos,
             const std::vector<int64_t>& doc, int64_t i, int64_t j) {
  if (p.causal && pos[size_t(j)] > pos[size_t(i)]) return false;
  if (doc[size_t(j)] != doc[size_t(i)]) return false;
  return window == 0 || std::abs(pos[size_t(i)] - pos[size_t(j)]) < window;
}

// P[i*S + j] and lse[i] of one (batch b, head h) of layer `layer`; masked entries of P
// are exactly 0. With a sink logit the denominator holds e^sink besides the keys' terms,
// so a row's P sums to 1 − (the sink's probability).
void probabilities(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                   const std::vector<int64_t>& pos, int b, int h, int layer, std::vector<double>& P,
                   double* lse) {
  const int64_t S = p.seq_len, D = p.head_dim, window = p.window_of(layer);
  const std::vector<int64_t> doc = document_ids(p, b);
  const std::vector<double> sinks = sink_logits(p, layer);
  const Layout L{S, D};
  const int g = h / (p.heads / p.kv_heads);
  const double scale = 1.0 / std::sqrt(double(D));
  const double masked = -std::numeric_limits<double>::infinity();
  const double sink = sinks.empty() ? masked : sinks[size_t(h)];
  for (int64_t i = 0; i < S; ++i) {
    double* row = &P[size_t(i * S)];
    const double* qi = &q[L.at(b, i, p.heads, h)];
    double mx = sink;
    for (int64_t j = 0; j < S; ++j) {
      if (!visible(p, window, pos, doc, i, j)) {
        row[j] = masked;
        continue;
      }
      const double* kj = &k[L.at(b, j, p.kv_heads, g)];
      double s = 0;
      for (int64_t e = 0; e < D; ++e) s += qi[e] * kj[e];
      row[j] = scale * s;
      mx = std::max(mx, row[j]);
    }
    // Subtracting the row max only keeps exp() in range; it cancels exactly in P and lse.
    double sum = sink == masked ? 0.0 : std::exp(sink - mx);
    for (int64_t j = 0; j < S; ++j) {
      row[j] = row[j] == masked ? 0.0 : std::exp(row[j] - mx);
      sum += row[j];
    }
    for (int64_t j = 0; j < S; ++j) row[j] /= sum;
    lse[i] = mx + std::log(sum);
  }
}

// The forward of one (batch b, head h): its probabilities P (kept for the backward),
// lse and o rows in r.
void forward_head(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                  const std::vector<double>& v, const std::vector<int64_t>& pos, int b, int h, int layer,
                  std::vector<double>& P, AttentionResult& r) {
  const int64_t S = p.seq_len, Dv = p.value_dim();
  const Layout Lv{S, Dv};
  const int g = h / (p.heads / p.kv_heads);
  probabilities(p, q, k, pos, b, h, layer, P, &r.lse[size_t((int64_t(b) * p.heads + h) * S)]);
  for (int64_t i = 0; i < S; ++i) {
    double* oi = &r.o[Lv.at(b, i, p.heads, h)];
    for (int64_t j = 0; j < S; ++j) {
      const double pij = P[size_t(i * S + j)];
      if (pij == 0) continue;  // masked: adds nothing
      const double* vj = &v[Lv.at(b, j, p.kv_heads, g)];
      for (int64_t e = 0; e < Dv; ++e) oi[e] += pij * vj[e];
    }
  }
}

AttentionResult forward_result(const Problem& p) {
  AttentionResult r;
  r.o.assign(size_t(p.batch) * p.seq_len * p.heads * p.value_dim(), 0.0);
  r.lse.assign(size_t(p.batch) * p.heads * p.seq_len, 0.0);
  return r;
}

}  // namespace

std::vector<double> sink_logits(const Problem& p, int layer) {
  if (p.sinks.empty()) return {};
  require(size_t(layer) < p.sinks.size() && p.sinks[size_t(layer)].size() == size_t(p.heads),
          "reference: sinks needs one logit per head of every layer");
  return p.sinks[size_t(layer)];
}

std::vector<std::vector<double>> generated_sinks(const Problem& p) {
  std::vector<std::vector<double>> sinks(size_t(p.layers));
  for (int l = 0; l < p.layers; ++l)
    for (int h = 0; h < p.heads; ++h) sinks[size_t(l)].push_back(sink_value(p.seed, l, h));
  return sinks;
}

std::vector<int64_t> document_ids(const Problem& p, int b) {
  std::vector<int64_t> ids(size_t(p.seq_len), 0);
  if (p.documents.empty()) return ids;
  require(p.documents.size() == size_t(p.batch), "reference: documents needs one length list per batch row");
  size_t token = 0;
  const std::vector<int64_t>& lengths = p.documents[size_t(b)];
  for (size_t d = 0; d < lengths.size(); ++d)
    for (int64_t t = 0; t < lengths[d]; ++t) {
      require(token < ids.size(), "reference: the document lengths exceed the sequence");
      ids[token++] = int64_t(d);
    }
  require(token == ids.size(), "reference: the document lengths do not fill the sequence");
  return ids;
}

AttentionResult attention_forward(const Problem& p, const std::vector<double>& q,
                                  const std::vector<double>& k, const std::vector<double>& v,
                                  const std::vector<int64_t>& positions, int layer) {
  check_shapes(p, q, k, v, positions);
  AttentionResult r = forward_result(p);
  std::vector<double> P(size_t(p.seq_len * p.seq_len));
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads; ++h) forward_head(p, q, k, v, positions, b, h, layer, P, r);
  return r;
}

AttentionResult attention_on(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                             const std::vector<double>& v, const std::vector<double>& dout,
                             const std::vector<int64_t>& positions, int layer) {
  check_shapes(p, q, k, v, positions);
  const int64_t S = p.seq_len, D = p.head_dim, Dv = p.value_dim();
  require(dout.size() == size_t(p.batch) * S * p.heads * Dv, "reference: dO has the wrong size");
  const Layout L{S, D}, Lv{S, Dv};
  const double scale = 1.0 / std::sqrt(double(D));
  const std::vector<double> sinks = sink_logits(p, layer);
  AttentionResult r = forward_result(p);
  r.dq.assign(q.size(), 0.0);
  r.dk.assign(k.size(), 0.0);
  r.dv.assign(v.size(), 0.0);
  r.dsinks.assign(sinks.size(), 0.0);
  std::vector<double> P(size_t(S * S)), dS(size_t(S * S));
  for (int b = 0; b < p.batch; ++b) {
    for (int h = 0; h < p.heads; ++h) {
      const int g = h / (p.heads / p.kv_heads);
      forward_head(p, q, k, v, positions, b, h, layer, P, r);  // P serves the backward too
      for (int64_t i = 0; i < S; ++i) {
        const double* doi = &dout[Lv.at(b, i, p.heads, h)];
        // dP_ij = dO_i·v_j, then dS_ij = P_ij (dP_ij − Σ_j' P_ij' dP_ij').
        // An entry with P_ij = 0 (masked) has dS_ij = 0 and adds nothing to the row's sum.
        double row_dot = 0;
        for (int64_t j = 0; j < S; ++j) {
          if (P[size_t(i * S + j)] == 0) continue;
          const double* vj = &v[Lv.at(b, j, p.kv_heads, g)];
          double dp = 0;
          for (int64_t e = 0; e < Dv; ++e) dp += doi[e] * vj[e];
          dS[size_t(i * S + j)] = dp;
          row_dot += P[size_t(i * S + j)] * dp;
        }
        // The sink is a key whose value is zero: its dP is 0, so its logit's gradient is
        // P_sink (0 − row_dot), with P_sink = e^(sink − lse).
        if (!sinks.empty())
          r.dsinks[size_t(h)] -=
              std::exp(sinks[size_t(h)] - r.lse[size_t((int64_t(b) * p.heads + h) * S + i)]) * row_dot;
        for (int64_t j = 0; j < S; ++j) {
          const double pij = P[size_t(i * S + j)];
          dS[size_t(i * S + j)] = pij == 0 ? 0.0 : pij * (dS[size_t(i * S + j)] - row_dot);
        }
      }
      for (int64_t i = 0; i < S; ++i) {
        const double* qi = &q[L.at(b, i, p.heads, h)];
        const double* doi = &dout[Lv.at(b, i, p.heads, h)];
        double* dqi = &r.dq[L.at(b, i, p.heads, h)];
        for (int64_t j = 0; j < S; ++j) {
          const size_t kj = L.at(b, j, p.kv_heads, g), vj = Lv.at(b, j, p.kv_heads, g);
          const double pij = P[size_t(i * S + j)], dsij = dS[size_t(i * S + j)];
          if (pij == 0) continue;  // masked: dS_ij = 0 too
          // Heads sharing kv head g accumulate into the same dK/dV rows. One loop per
          // output, so that each is a plain vector update.
          const double* kr = &k[kj];
          double *dkj = &r.dk[kj], *dvj = &r.dv[vj];
          for (int64_t e = 0; e < D; ++e) dqi[e] += scale * dsij * kr[e];
          for (int64_t e = 0; e < D; ++e) dkj[e] += scale * dsij * qi[e];
          for (int64_t e = 0; e < Dv; ++e) dvj[e] += pij * doi[e];
        }
      }
    }
  }
  return r;
}

AttentionResult attention(const Problem& p) {
  const AttentionInputs in = attention_inputs(p);
  std::vector<int64_t> positions(size_t(p.seq_len));
  for (int64_t s = 0; s < p.seq_len; ++s) positions[size_t(s)] = s;
  return attention_on(p, in.q, in.k, in.v, in.dout, positions);
}

}  // namespace minictx::reference
