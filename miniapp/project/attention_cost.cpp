#include "project/attention_cost.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/engine/ring_blocks.hpp"
#include "device/device_footprint.hpp"
#include "model/elementwise_work.hpp"
#include "model/flops.hpp"
#include "project/rank_geometry.hpp"

namespace minictx {
namespace {

// Bytes per element on the wire: tensor data travels in the run's dtype, softmax
// statistics (LSE, D) in fp32 (docs/user-guide.md, "Backends").
double data_bytes(const RunConfig& cfg) { return double(element_bytes(cfg.run.dtype)); }
constexpr double kStatBytes = 4;

// Heads a rank of a Ulysses group of u holds (HeadExchange's split; one replica when u > heads).
int head_share(int heads, int u) { return heads >= u ? heads / u : 1; }

// An all-to-all-like exchange sending `bytes_per_peer` to every peer: the intra- and
// inter-node parts go at once; the slower one is the time.
Cost exchange_cost(double bytes_per_peer, const PeerSplit& peers, const LinkRates& links) {
  const double ti = peers.intra > 0 ? links.intra.seconds(peers.intra * bytes_per_peer) : 0;
  const double te = peers.inter > 0 ? links.inter.seconds(peers.inter * bytes_per_peer) : 0;
  Cost c = te > ti ? cost_of(Bound::inter, te) : cost_of(Bound::intra, ti);
  c.bytes_intra = peers.intra * bytes_per_peer;
  c.bytes_inter = peers.inter * bytes_per_peer;
  c.all_to_all = c.seconds();
  return c;
}

// The kernel time of a block of q × k rows whose FLOPs without packed documents are
// `flops`. Packed documents keep their share of the pairs, and the run splits the block
// into one kernel call per document met (run_by_document): calls of at most a document's
// rows, at the efficiency of that length, each with its launch. The documents are taken
// as spread evenly over the ranks: a packing that loads some ranks more is not modelled.
double block_seconds(const KernelRates& rates, bool backward, int head_dim, double flops, double q, double k,
                     bool masked, const DocumentWork& docs) {
  const double piece_q = std::min(q, docs.token_length), piece_k = std::min(k, docs.token_length);
  const double t =
      rates.attention_seconds(backward, flops * docs.pair_share, head_dim, piece_q, piece_k, masked);
  if (t <= 0) return 0;
  return t + (std::ceil(std::max(q, k) / docs.token_length) - 1) * rates.call_seconds();
}

// The kernel time of one active block: FLOPs (FlashAttention convention) of its whole
// rows, or half of them under the causal mask's diagonal (a causal diagonal block, every
// causal stripe block), at the efficiency of the block's length and mask, kept by shape.
class BlockTimes {
 public:
  BlockTimes(const KernelRates& rates, bool backward, int head_dim, double per_pair, const DocumentWork& docs)
      : rates_(rates), backward_(backward), head_dim_(head_dim), per_pair_(per_pair), docs_(docs) {}

  double seconds(const ActiveRows& a, bool masked) {
    if (a.empty()) return 0;
    for (const Known& k : known_)
      if (k.q == a.q.len && k.k == a.k.len && k.masked == masked) return k.seconds;
    const double q = double(a.q.len), k = double(a.k.len);
    const double flops = per_pair_ * q * k * (masked ? 0.5 : 1.0) * (backward_ ? 2.5 : 1.0);
    const double t = block_seconds(rates_, backward_, head_dim_, flops, q, k, masked, docs_);
    known_.push_back({a.q.len, a.k.len, masked, t});
    return t;
  }

 private:
  struct Known {
    int64_t q, k;
    bool masked;
    double seconds;
  };
  const KernelRates& rates_;
  bool backward_;
  int head_dim_;
  double per_pair_;
  DocumentWork docs_;
  std::vector<Known> known_;
};

// Element-wise calls, each at its kernel's rate: time against the device memory.
Cost elementwise(const KernelRates& rates, std::initializer_list<ElementwiseCall> calls) {
  double s = 0;
  for (const ElementwiseCall& c : calls) s += rates.elementwise_seconds(c);
  return cost_of(Bound::memory, s);
}

// The ring engine's own element-wise work in one pass over C ring ranks (RingEngine,
// RingWalk), between its kernels: the payload copied into the walk's first buffer; the
// forward's output and LSE set to the merge's identity; the backward's delta (reading o
// and dO), the gradients that stay zeroed, and at every step the step's gradient scratch
// zeroed and added into the travelling accumulators (zeroed when a round starts), which
// are copied out at the end. m: floats of o (dQ); rows: of LSE; kv: of dK and dV. The
// walk's buffers are allocated per pass, on memory the device kept from the step before
// (BlockCache): no new pages in a measured step.
Cost ring_engine_elementwise(AttentionPass pass, BackwardTraffic traffic, int ranks, double payload,
                             double accumulator, double m, double rows, double kv, const KernelRates& rates) {
  if (pass != AttentionPass::backward)
    return elementwise(
        rates, {{Elementwise::copy, 1, payload}, {Elementwise::fill, 1, m}, {Elementwise::fill, 1, rows}});
  Cost c = elementwise(rates, {{Elementwise::copy, 1, payload},
                               {Elementwise::copy, 1, m},  // delta: o and dO read, a row vector written
                               {Elementwise::fill, 1, traffic == BackwardTraffic::kv ? m : kv},
                               {Elementwise::fill, 1, accumulator},
                               {Elementwise::copy, 1, accumulator}});
  c += elementwise(rates, {{Elementwise::fill, 1, accumulator}, {Elementwise::add, 1, accumulator}})
           .times(ranks);
  return c;
}

// The head exchanges (HeadExchange) around a Ulysses-split ring walk. Forward: q, k, v to
// heads, o and lse back; backward: q, k, v, o, lse, dout to heads, dq, dk, dv back. Per
// peer, a rank's local rows of the peer's head share; each tensor is packed into the send
// buffer and unpacked from the receive buffer (two copies of its local rows).
Cost head_exchanges(const RunConfig& cfg, const Topology& topology, const AttentionPlan& plan, bool backward,
                    const KernelRates& rates, const LinkRates& links) {
  const int u = plan.degrees.ulysses;
  if (u <= 1) return {};
  const double d = cfg.model.head_dim, dv = cfg.model.value_dim();
  const int heads = cfg.model.heads / u, kv_heads = head_share(cfg.model.kv_heads, u);  // validated
  // Each exchanged tensor's width and bytes per element: head data in the run's dtype, the
  // LSE rows in fp32.
  struct Exchanged {
    double width, element_bytes;
  };
  const double e = data_bytes(cfg);
  const Exchanged q{heads * d, e}, k{kv_heads * d, e}, v{kv_heads * dv, e}, o{heads * dv, e},
      lse{double(heads), kStatBytes * lse_planes(cfg.run.device)};
  const PeerSplit peers = ulysses_peers(u, topology);
  const double local_rows = cfg.sequence.batch * double(plan.layout.local_len());
  const std::vector<Exchanged> exchanged = backward ? std::vector<Exchanged>{q, k, v, o, lse, o, q, k, v}
                                                    : std::vector<Exchanged>{q, k, v, o, lse};
  Cost total;
  for (const Exchanged& x : exchanged) {
    const double width = x.width;
    total += exchange_cost(local_rows * width * x.element_bytes, peers, links);
    total +=
        elementwise(rates, {{Elementwise::copy, local_rows, width}, {Elementwise::copy, local_rows, width}});
  }
  return total;
}

// How far blocks travel on a plain ring under a sliding window (window_hops, the engine's
// rule on the ring ranks' positions); empty without a window or on a two-level ring.
std::vector<int> ring_hops(const RunConfig& cfg, const AttentionPlan& plan, int64_t window, int64_t q_rows,
                           int64_t k_rows, bool q_side) {
  if (window == 0 || plan.degrees.window != plan.degrees.context) return {};
  AttnShape s;
  s.causal = cfg.attention.causal;
  s.real_len = plan.layout.real_len();
  s.window = window;
  std::vector<std::vector<int64_t>> positions;
  positions.reserve(size_t(plan.degrees.context));
  for (int j = 0; j < plan.degrees.context; ++j) positions.push_back(plan.layout.outer_positions(j));
  return window_hops(s, plan.layout.kind(), positions, q_rows, k_rows, q_side);
}

// The share of a full ring's block work left under a sliding window, spread over the steps
// that run: the window's pairs over all pairs, times the steps a full ring takes over the
// steps left (at most 1: a step is at most its block).
double window_step_share(const RunConfig& cfg, int64_t window, int ranks, const std::vector<int>& hops) {
  if (hops.empty()) return 1;
  const int steps = 1 + *std::max_element(hops.begin(), hops.end());
  return std::min(1.0, attention_pairs(cfg, window) / attention_pairs(cfg) * ranks / steps);
}

Cost ring_scheme(const RunConfig& cfg, const Topology& topology, const AttentionPlan& plan, int64_t window,
                 AttentionPass pass, const KernelRates& rates, const LinkRates& links,
                 RingWalkModel::StepTimes* ring_step) {
  const ModelShape& m = cfg.model;
  const int u = plan.degrees.ulysses;
  const double b = cfg.sequence.batch, d = m.head_dim, dv = m.value_dim();
  const int heads = m.heads / u, kv_heads = head_share(m.kv_heads, u);
  const int64_t rows = plan.layout.outer_len();  // a ring rank's share, per sequence
  const LayoutKind kind = plan.layout.kind();
  const bool causal = cfg.attention.causal;
  // selective_half: the first half of the rows; under a causal mask only as many keys.
  const int64_t q_rows = pass == AttentionPass::forward_query_prefix ? plan.layout.local_len() / 2 : rows;
  const int64_t k_rows = pass == AttentionPass::forward_query_prefix && causal ? q_rows : rows;
  const bool backward = pass == AttentionPass::backward;
  const bool q_side = backward && plan.traffic == BackwardTraffic::q;
  const std::vector<int> hops = ring_hops(cfg, plan, window, q_rows, backward ? rows : k_rows, q_side);
  const double per_pair =
      2.0 * b * heads * (d + dv) * window_step_share(cfg, window, plan.degrees.context, hops);

  Cost total = head_exchanges(cfg, topology, plan, backward, rates, links);
  const RingWalkModel walk(u, plan.degrees.context, plan.degrees.window, topology);
  BlockTimes blocks(rates, backward, m.head_dim, per_pair, document_work(cfg));
  // A block's active rows depend only on whether its source is the computing ring rank,
  // an earlier or a later one (active_rows): ring ranks 0 and 1 stand for every pair. The
  // balanced layout's blocks are taken as its mean: every block half masked.
  auto block_seconds = [&](int j, int src) {
    const bool masked = causal && (j == src || kind == LayoutKind::stripe || kind == LayoutKind::balanced);
    ActiveRows a;
    if (!backward)
      a = active_rows(kind, causal, j, src, q_rows, k_rows);
    else if (plan.traffic == BackwardTraffic::kv)
      a = active_rows(kind, causal, j, src, rows, rows);
    else
      a = active_rows(kind, causal, src, j, rows, rows);
    return blocks.seconds(a, masked);
  };
  const RingWalkModel::StepSeconds steps{block_seconds(0, 0),
                                         std::max(block_seconds(1, 0), block_seconds(0, 1))};
  const double kv = b * double(rows) * kv_heads * (d + dv);  // K and V
  const double mq = b * double(rows) * heads * d;            // Q (dQ)
  const double mo = b * double(rows) * heads * dv;           // dO (O)
  const int planes = lse_planes(cfg.run.device);
  double payload = kv, accumulator = 0;
  if (pass == AttentionPass::forward_query_prefix) payload = b * double(k_rows) * kv_heads * (d + dv);
  if (backward && plan.traffic == BackwardTraffic::kv) accumulator = kv;
  if (q_side) {
    payload = mq + mo + (planes + 1) * b * double(rows) * heads;  // Q, dO, LSE, D
    accumulator = mq;                                             // dQ
  }
  // On the wire: Q, dO, K, V and the gradients in the run's dtype, LSE (its planes) and D in fp32.
  const double e = data_bytes(cfg);
  const double payload_bytes =
      q_side ? (mq + mo) * e + (planes + 1) * b * double(rows) * heads * kStatBytes : payload * e;
  if (hops.empty())
    total += walk.walk(payload_bytes, accumulator * e, steps, links.intra, links.inter, ring_step);
  else
    total +=
        walk.windowed_walk(hops, payload_bytes, accumulator * e, steps, links.intra, links.inter, ring_step);
  const int ring_steps = hops.empty() ? walk.ranks() : 1 + *std::max_element(hops.begin(), hops.end());
  total += ring_engine_elementwise(pass, plan.traffic, ring_steps, payload, accumulator,
                                   b * double(q_rows) * heads * dv, b * double(q_rows) * heads, kv, rates);

  return total;
}

Cost allgather_scheme(const RunConfig& cfg, const Topology& topology, const AttentionPlan& plan,
                      int64_t window, AttentionPass pass, const KernelRates& rates, const LinkRates& links) {
  const ModelShape& m = cfg.model;
  const int p = topology.world_size;
  const double b = cfg.sequence.batch, d = m.head_dim, dv = m.value_dim();
  const double len = double(plan.layout.local_len()), all = double(plan.layout.padded_len());
  const PeerSplit peers = consecutive_peers(0, p, topology);
  const double k_bytes = b * len * m.kv_heads * d * data_bytes(cfg);   // K (dK) per rank
  const double v_bytes = b * len * m.kv_heads * dv * data_bytes(cfg);  // V (dV) per rank
  Cost total;
  const bool backward = pass == AttentionPass::backward;
  // Forward: all-gather K and V; backward: again, then reduce-scatter dK and dV. A window
  // changes what the kernel computes, not what is gathered.
  for (int t = 0; t < (backward ? 2 : 1); ++t) {
    total += exchange_cost(k_bytes, peers, links);
    total += exchange_cost(v_bytes, peers, links);
  }
  // The last rank's queries see the most keys (contiguous layout): with a causal mask
  // every earlier key (an unmasked part) and their own share's (a causal diagonal part),
  // in one kernel call.
  const double queries = pass == AttentionPass::forward_query_prefix ? len / 2 : len;
  // A window's pairs, as a share of all pairs, spread over the rank's keys.
  const double per_pair = 2.0 * b * m.heads * (d + dv) * (backward ? 2.5 : 1.0) *
                          (window > 0 ? attention_pairs(cfg, window) / attention_pairs(cfg) : 1.0);
  const bool causal = cfg.attention.causal;
  const double earlier = causal ? all - len : all;
  const DocumentWork docs = document_work(cfg);
  const double t_full =
      block_seconds(rates, backward, m.head_dim, per_pair * queries * earlier, queries, earlier, false, docs);
  const double t_diag = causal ? block_seconds(rates, backward, m.head_dim, per_pair * queries * queries / 2,
                                               queries, queries, true, docs)
                               : 0;
  const double one_call = t_full > 0 && t_diag > 0 ? rates.call_seconds() : 0;
  total += cost_of(Bound::compute, t_full + t_diag - one_call);
  return total;
}

}  // namespace

Cost attention_cost(const RunConfig& cfg, const Topology& topology, const AttentionPlan& plan, int layer,
                    AttentionPass pass, const KernelRates& rates, const LinkRates& links,
                    RingWalkModel::StepTimes* ring_step) {
  const int64_t window = cfg.attention.window.of_layer(layer);
  return plan.scheme == AttentionScheme::allgather
             ? allgather_scheme(cfg, topology, plan, window, pass, rates, links)
             : ring_scheme(cfg, topology, plan, window, pass, rates, links, ring_step);
}

Cost all_reduce_cost(double floats, double bytes_per_float, int calls, const Topology& topology,
                     const LinkRates& links) {
  const int p = topology.world_size;
  if (p < 2) return {};
  const PeerSplit peers = consecutive_peers(0, p, topology);
  // Comm counts 2(P−1)/P of the buffer, spread evenly over the P−1 peers.
  const double per_peer = 2.0 * floats * bytes_per_float / p;
  Cost c;
  c.bytes_intra = peers.intra * per_peer;
  c.bytes_inter = peers.inter * per_peer;
  // The ring algorithm: 2(P−1) steps of 1/P of the buffer over the ring's slowest edge.
  const LinkRate& link = peers.any_inter ? links.inter : links.intra;
  const double seconds = calls * 2.0 * (p - 1) * link.latency_us * 1e-6 +
                         2.0 * (p - 1) / p * floats * bytes_per_float / (link.bandwidth_gb_s * 1e9);
  Cost t = cost_of(peers.any_inter ? Bound::inter : Bound::intra, seconds);
  t.bytes_intra = c.bytes_intra;
  t.bytes_inter = c.bytes_inter;
  return t;
}

}  // namespace minictx
