// Decoder layer stack (RMSNorm → GQA attention with RoPE → residual → RMSNorm → SwiGLU
// → residual) and its hand-derived backward, over rows t = (b, s) of a [B·S, ·] matrix.
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.hpp"
#include "reference/reference.hpp"

namespace minictx::reference {
namespace {

using Vec = std::vector<double>;

// C[n,m] = A[n,k] · B[k,m]
Vec matmul(const Vec& A, const Vec& B, int64_t n, int64_t k, int64_t m) {
  Vec C(size_t(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t x = 0; x < k; ++x)
      for (int64_t j = 0; j < m; ++j) C[size_t(i * m + j)] += A[size_t(i * k + x)] * B[size_t(x * m + j)];
  return C;
}

// C[n,k] += A[n,m] · B[k,m]ᵀ  (gradient w.r.t. the left operand of y = x·W). Each
// C[i,x] gets its sum over j, taken in order; B is transposed first so that the k sums
// of a row of C run side by side.
void add_matmul_nt(const Vec& A, const Vec& B, int64_t n, int64_t m, int64_t k, Vec& C) {
  Vec Bt(B.size());
  for (int64_t x = 0; x < k; ++x)
    for (int64_t j = 0; j < m; ++j) Bt[size_t(j * k + x)] = B[size_t(x * m + j)];
  Vec s(static_cast<size_t>(k));
  for (int64_t i = 0; i < n; ++i) {
    std::fill(s.begin(), s.end(), 0.0);
    for (int64_t j = 0; j < m; ++j) {
      const double a = A[size_t(i * m + j)];
      for (int64_t x = 0; x < k; ++x) s[size_t(x)] += a * Bt[size_t(j * k + x)];
    }
    for (int64_t x = 0; x < k; ++x) C[size_t(i * k + x)] += s[size_t(x)];
  }
}

// C[k,m] = A[n,k]ᵀ · B[n,m]  (gradient w.r.t. the weight of y = x·W)
Vec matmul_tn(const Vec& A, const Vec& B, int64_t n, int64_t k, int64_t m) {
  Vec C(size_t(k * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t x = 0; x < k; ++x)
      for (int64_t j = 0; j < m; ++j) C[size_t(x * m + j)] += A[size_t(i * k + x)] * B[size_t(i * m + j)];
  return C;
}

// h = x · r · g per row, r = 1/sqrt(mean x² + eps); r is kept for the backward.
Vec rmsnorm(const Vec& x, const Vec& g, int64_t T, int64_t d, double eps, Vec& r) {
  Vec h(x.size());
  r.resize(size_t(T));
  for (int64_t t = 0; t < T; ++t) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += x[size_t(t * d + j)] * x[size_t(t * d + j)];
    r[size_t(t)] = 1.0 / std::sqrt(ss / double(d) + eps);
    for (int64_t j = 0; j < d; ++j) h[size_t(t * d + j)] = x[size_t(t * d + j)] * r[size_t(t)] * g[size_t(j)];
  }
  return h;
}

// With ∂r/∂x_j = −r³ x_j / d:
//   dx_j += r g_j dh_j − x_j r³/d Σ_k dh_k g_k x_k,   dg_j += Σ_t dh_j x_j r.
void rmsnorm_backward(const Vec& x, const Vec& g, const Vec& r, const Vec& dh, int64_t T, int64_t d, Vec& dx,
                      Vec& dg) {
  dg.assign(size_t(d), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const double rt = r[size_t(t)];
    double dot = 0;
    for (int64_t j = 0; j < d; ++j) {
      const size_t i = size_t(t * d + j);
      dot += dh[i] * g[size_t(j)] * x[i];
      dg[size_t(j)] += dh[i] * x[i] * rt;
    }
    for (int64_t j = 0; j < d; ++j) {
      const size_t i = size_t(t * d + j);
      dx[i] += rt * g[size_t(j)] * dh[i] - x[i] * rt * rt * rt / double(d) * dot;
    }
  }
}

// Rotates each half-split pair (i, i + D/2) of every head by sign·pos·θ_i in place.
// sign = −1 is the inverse (= transposed) rotation, which is exactly the RoPE backward.
// A token's position is counted from the first token of its document.
void rope(Vec& x, const Problem& p, int heads, double sign) {
  const int64_t D = p.head_dim, half = D / 2;
  for (int b = 0; b < p.batch; ++b) {
    const std::vector<int64_t> doc = document_ids(p, b);
    int64_t in_doc = 0;
    for (int64_t s = 0; s < p.seq_len; ++s) {
      in_doc = s > 0 && doc[size_t(s)] == doc[size_t(s - 1)] ? in_doc + 1 : 0;
      for (int h = 0; h < heads; ++h) {
        double* v = &x[size_t(((b * p.seq_len + s) * heads + h) * D)];
        for (int64_t i = 0; i < half; ++i) {
          const double a = sign * double(in_doc) * std::pow(p.rope_theta, -2.0 * double(i) / double(D));
          const double c = std::cos(a), sn = std::sin(a), lo = v[i], hi = v[i + half];
          v[i] = lo * c - hi * sn;
          v[i + half] = lo * sn + hi * c;
        }
      }
    }
  }
}

double sigmoid(double a) { return 1.0 / (1.0 + std::exp(-a)); }

// Forward activations of one layer that its backward needs.
struct LayerCache {
  Vec x, r1, h1, q, k, v, o, x2, r2, h2, a, u, m;  // q, k after RoPE
};

// Rows, and the widths of x, q, k, v, the attention output and the MLP.
struct Dims {
  int64_t T, d, qd, kd, vd, od, f;
  explicit Dims(const Problem& p)
      : T(int64_t(p.batch) * p.seq_len),
        d(p.d_model),
        qd(int64_t(p.heads) * p.head_dim),
        kd(int64_t(p.kv_heads) * p.head_dim),
        vd(int64_t(p.kv_heads) * p.value_dim()),
        od(int64_t(p.heads) * p.value_dim()),
        f(p.ffn_hidden) {}
};

std::vector<int64_t> positions(const Problem& p) {
  std::vector<int64_t> pos(size_t(p.seq_len));
  for (int64_t s = 0; s < p.seq_len; ++s) pos[size_t(s)] = s;
  return pos;
}

const Vec& weight(const std::vector<Vec>& W, Weight w) { return W[size_t(int(w))]; }

Vec layer_forward(const Problem& p, int layer, const std::vector<Vec>& W, Vec x, LayerCache& c) {
  const Dims n(p);
  c.x = std::move(x);
  c.h1 = rmsnorm(c.x, weight(W, Weight::g_attn), n.T, n.d, p.rms_eps, c.r1);
  c.q = matmul(c.h1, weight(W, Weight::wq), n.T, n.d, n.qd);
  c.k = matmul(c.h1, weight(W, Weight::wk), n.T, n.d, n.kd);
  c.v = matmul(c.h1, weight(W, Weight::wv), n.T, n.d, n.vd);
  rope(c.q, p, p.heads, +1.0);
  rope(c.k, p, p.kv_heads, +1.0);
  c.o = attention_forward(p, c.q, c.k, c.v, positions(p), layer).o;
  c.x2 = matmul(c.o, weight(W, Weight::wo), n.T, n.od, n.d);
  for (size_t i = 0; i < c.x2.size(); ++i) c.x2[i] += c.x[i];
  c.h2 = rmsnorm(c.x2, weight(W, Weight::g_mlp), n.T, n.d, p.rms_eps, c.r2);
  c.a = matmul(c.h2, weight(W, Weight::w1), n.T, n.d, n.f);
  c.u = matmul(c.h2, weight(W, Weight::w3), n.T, n.d, n.f);
  c.m.resize(c.a.size());
  for (size_t i = 0; i < c.m.size(); ++i) c.m[i] = c.a[i] * sigmoid(c.a[i]) * c.u[i];
  Vec y = matmul(c.m, weight(W, Weight::w2), n.T, n.f, n.d);
  for (size_t i = 0; i < y.size(); ++i) y[i] += c.x2[i];
  return y;
}

// Returns dL/dx of the layer input given dy = dL/dy; fills grads[int(Weight)] and, with
// sinks, sink_grads.
Vec layer_backward(const Problem& p, int layer, const std::vector<Vec>& W, const LayerCache& c, const Vec& dy,
                   std::vector<Vec>& grads, Vec& sink_grads) {
  const Dims n(p);
  grads.assign(size_t(Weight::count), Vec());
  auto grad = [&](Weight w) -> Vec& { return grads[size_t(int(w))]; };

  // y = x2 + m·w2
  Vec dx2 = dy;
  grad(Weight::w2) = matmul_tn(c.m, dy, n.T, n.f, n.d);
  Vec dm(size_t(n.T * n.f), 0.0);
  add_matmul_nt(dy, weight(W, Weight::w2), n.T, n.d, n.f, dm);

  // m = silu(a)∘u, silu'(a) = σ(a)(1 + a(1 − σ(a)))
  Vec da(dm.size()), du(dm.size());
  for (size_t i = 0; i < dm.size(); ++i) {
    const double sg = sigmoid(c.a[i]);
    du[i] = dm[i] * c.a[i] * sg;
    da[i] = dm[i] * c.u[i] * sg * (1.0 + c.a[i] * (1.0 - sg));
  }
  grad(Weight::w1) = matmul_tn(c.h2, da, n.T, n.d, n.f);
  grad(Weight::w3) = matmul_tn(c.h2, du, n.T, n.d, n.f);
  Vec dh2(size_t(n.T * n.d), 0.0);
  add_matmul_nt(da, weight(W, Weight::w1), n.T, n.f, n.d, dh2);
  add_matmul_nt(du, weight(W, Weight::w3), n.T, n.f, n.d, dh2);
  rmsnorm_backward(c.x2, weight(W, Weight::g_mlp), c.r2, dh2, n.T, n.d, dx2, grad(Weight::g_mlp));

  // x2 = x + o·wo
  Vec dx = dx2;
  grad(Weight::wo) = matmul_tn(c.o, dx2, n.T, n.od, n.d);
  Vec dout(size_t(n.T * n.od), 0.0);
  add_matmul_nt(dx2, weight(W, Weight::wo), n.T, n.d, n.od, dout);

  AttentionResult att = attention_on(p, c.q, c.k, c.v, dout, positions(p), layer);
  sink_grads = std::move(att.dsinks);
  rope(att.dq, p, p.heads, -1.0);
  rope(att.dk, p, p.kv_heads, -1.0);
  grad(Weight::wq) = matmul_tn(c.h1, att.dq, n.T, n.d, n.qd);
  grad(Weight::wk) = matmul_tn(c.h1, att.dk, n.T, n.d, n.kd);
  grad(Weight::wv) = matmul_tn(c.h1, att.dv, n.T, n.d, n.vd);
  Vec dh1(size_t(n.T * n.d), 0.0);
  add_matmul_nt(att.dq, weight(W, Weight::wq), n.T, n.qd, n.d, dh1);
  add_matmul_nt(att.dk, weight(W, Weight::wk), n.T, n.kd, n.d, dh1);
  add_matmul_nt(att.dv, weight(W, Weight::wv), n.T, n.vd, n.d, dh1);
  rmsnorm_backward(c.x, weight(W, Weight::g_attn), c.r1, dh1, n.T, n.d, dx, grad(Weight::g_attn));
  return dx;
}

void check_problem(const Problem& p, const Weights& weights, const Vec& x) {
  require(p.head_dim % 2 == 0, "reference: RoPE needs an even head_dim");
  require(int(weights.size()) == p.layers, "reference: one weight set per layer expected");
  require(x.size() == size_t(Dims(p).T * p.d_model), "reference: x has the wrong size");
}

// The loss of the last layer's output y and, with `grads`, dL/dy and dL/dW_head.
struct Loss {
  double value = 0;
  Vec dy, dhead;
};

// Σ c∘y / T: dL/dy = c / T.
Loss projection_loss(const Problem& p, const Vec& y, bool grads) {
  const double T = double(Dims(p).T);
  Loss r;
  const Vec c = make_loss_weights(p);
  for (size_t i = 0; i < y.size(); ++i) r.value += c[i] * y[i];
  r.value /= T;
  if (grads)
    for (double ci : c) r.dy.push_back(ci / T);
  return r;
}

// z = y·W_head, L = (1/T) Σ_t (log Σ_v e^{z_tv} − z_t,label(t)); with
// dz = (softmax(z) − onehot(label)) / T: dL/dy = dz·W_headᵀ, dL/dW_head = yᵀ·dz.
Loss cross_entropy_loss(const Problem& p, const Vec& y, const Vec& head, bool grads) {
  const Dims n(p);
  const int64_t V = p.vocab;
  const std::vector<int64_t> labels = make_labels(p);
  Vec z = matmul(y, head, n.T, n.d, V);
  Loss r;
  for (int64_t t = 0; t < n.T; ++t) {
    double* row = &z[size_t(t * V)];
    const double top = *std::max_element(row, row + V);
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - top);
    const double lse = top + std::log(sum);
    r.value += lse - row[labels[size_t(t)]];
    for (int64_t v = 0; v < V; ++v) row[v] = std::exp(row[v] - lse) / double(n.T);  // dz
    row[labels[size_t(t)]] -= 1.0 / double(n.T);
  }
  r.value /= double(n.T);
  if (!grads) return r;
  r.dy.assign(size_t(n.T * n.d), 0.0);
  add_matmul_nt(z, head, n.T, V, n.d, r.dy);
  r.dhead = matmul_tn(y, z, n.T, n.d, V);
  return r;
}

Loss loss_of(const Problem& p, const Vec& y, const Vec& head, bool grads) {
  return p.vocab > 0 ? cross_entropy_loss(p, y, head, grads) : projection_loss(p, y, grads);
}

}  // namespace

double model_loss(const Problem& p, const Weights& weights, const Vec& x, const Vec& head) {
  check_problem(p, weights, x);
  Vec y = x;
  LayerCache scratch;
  for (int l = 0; l < p.layers; ++l) y = layer_forward(p, l, weights[size_t(l)], std::move(y), scratch);
  return loss_of(p, y, head.empty() && p.vocab > 0 ? make_head(p) : head, false).value;
}

ModelResult model(const Problem& p) {
  const Weights weights = make_weights(p);
  Vec y = make_input(p);
  check_problem(p, weights, y);
  std::vector<LayerCache> caches(size_t(p.layers));
  for (int l = 0; l < p.layers; ++l)
    y = layer_forward(p, l, weights[size_t(l)], std::move(y), caches[size_t(l)]);

  ModelResult r;
  Loss loss = loss_of(p, y, p.vocab > 0 ? make_head(p) : Vec(), true);
  r.loss = loss.value;
  r.head_grad = std::move(loss.dhead);
  Vec dy = std::move(loss.dy);
  r.weight_grads.resize(size_t(p.layers));
  r.sink_grads.resize(size_t(p.layers));
  for (int l = p.layers - 1; l >= 0; --l)
    dy = layer_backward(p, l, weights[size_t(l)], caches[size_t(l)], dy, r.weight_grads[size_t(l)],
                        r.sink_grads[size_t(l)]);
  r.y = std::move(y);
  r.dx = std::move(dy);
  return r;
}

}  // namespace minictx::reference
