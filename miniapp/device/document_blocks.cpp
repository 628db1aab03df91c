#include "device/document_blocks.hpp"

#include <vector>

namespace minictx {

namespace {

// Rows [begin, end) of a block, all in the document that starts at position `doc`.
struct Span {
  int64_t doc, begin, end;
};

// The block's rows by document, in row order, for batch row b; padding belongs to none.
std::vector<Span> document_spans(const DocumentBounds& docs, int b, const SeqBlock& blk) {
  std::vector<Span> spans;
  for (int64_t i = 0; i < blk.len; ++i) {
    const int64_t doc = docs.document_start(b, blk.positions[i]);
    if (doc < 0) continue;
    if (spans.empty() || spans.back().doc != doc)
      spans.push_back({doc, i, i + 1});
    else
      spans.back().end = i + 1;
  }
  return spans;
}

SeqBlock part(const SeqBlock& blk, const Span& rows) {
  return {blk.tensor, blk.begin + rows.begin, rows.end - rows.begin, blk.positions + rows.begin};
}

// Runs `kernel` under `shape` on each sub-block of blk that pairs one document's query
// rows with its key rows (batch row b's packing), but for pairs causality masks whole.
template <class Block, class Kernel>
void run_by_document(const DocumentBounds& docs, int b, const AttnShape& shape, const Block& blk,
                     const Kernel& kernel) {
  const std::vector<Span> qs = document_spans(docs, b, blk.q), ks = document_spans(docs, b, blk.k);
  size_t j = 0;
  for (const Span& qrows : qs) {
    while (j < ks.size() && ks[j].doc < qrows.doc) ++j;
    if (j == ks.size()) return;
    const Span& krows = ks[j];
    if (krows.doc != qrows.doc) continue;
    if (shape.causal && blk.k.positions[krows.begin] > blk.q.positions[qrows.end - 1]) continue;
    Block sub = blk;
    sub.q = part(blk.q, qrows);
    sub.k = part(blk.k, krows);
    sub.v = part(blk.v, krows);
    kernel(shape, sub);
  }
}

// Rows [begin, begin + len) of one batch row of a tensor laid out [planes, batch, outer,
// rows, width] (q, o and the gradients: outer 1, width heads·D; lse: its planes
// (Device::lse_planes), outer heads, width 1; delta: outer heads, width 1), taken into a
// [planes, outer, len, width] tensor of its dtype and put back.
struct RowSlice {
  int64_t outer, rows, width, begin, len, planes, batch;
  int64_t offset(int b, int64_t plane) const {
    return (((plane * batch + b) * outer) * rows + begin) * width;
  }
  int64_t plane_size() const { return outer * len * width; }
};

// The slice of t holding a block's rows.
RowSlice rows_of(const Tensor& t, int batch, int64_t outer, int64_t width, const SeqBlock& blk,
                 int planes = 1) {
  return {outer, t.numel() / (planes * batch * outer * width), width, blk.begin, blk.len, planes, batch};
}

Tensor take(Device& dev, const Tensor& t, const RowSlice& s, int b) {
  Tensor one = dev.alloc({s.planes, s.outer, s.len, s.width}, t.dtype());
  for (int64_t p = 0; p < s.planes; ++p)
    dev.copy_rows(one, p * s.plane_size(), s.len * s.width, t, s.offset(b, p), s.rows * s.width, s.outer,
                  s.len * s.width);
  return one;
}

void put(Device& dev, Tensor& t, const RowSlice& s, int b, const Tensor& one) {
  for (int64_t p = 0; p < s.planes; ++p)
    dev.copy_rows(t, s.offset(b, p), s.rows * s.width, one, p * s.plane_size(), s.len * s.width, s.outer,
                  s.len * s.width);
}

// Row widths of the block's tensors: q (and dq) H·D, k H_kv·D, v H_kv·Dv, o (and dout) H·Dv.
struct Widths {
  explicit Widths(const AttnShape& s)
      : q(int64_t(s.heads) * s.head_dim),
        k(int64_t(s.kv_heads) * s.head_dim),
        v(int64_t(s.kv_heads) * s.value_dim()),
        o(int64_t(s.heads) * s.value_dim()) {}
  int64_t q, k, v, o;
};

AttnShape without_documents(const AttnShape& s, int batch) {
  AttnShape plain = s;
  plain.batch = batch;
  plain.documents = nullptr;
  return plain;
}

}  // namespace

void attn_fwd_by_documents(Device& dev, const AttnShape& s, const AttnFwdBlock& blk,
                           const AttnFwdKernel& kernel) {
  const DocumentBounds& docs = *s.documents;
  if (docs.rows_alike()) return run_by_document(docs, 0, without_documents(s, s.batch), blk, kernel);
  const AttnShape one = without_documents(s, 1);
  const Widths w(s);
  const RowSlice q = rows_of(*blk.q.tensor, s.batch, 1, w.q, blk.q),
                 o = rows_of(*blk.o, s.batch, 1, w.o, blk.q),
                 lse = rows_of(*blk.lse, s.batch, s.heads, 1, blk.q, dev.lse_planes());
  const RowSlice k = rows_of(*blk.k.tensor, s.batch, 1, w.k, blk.k),
                 v = rows_of(*blk.v.tensor, s.batch, 1, w.v, blk.v);
  for (int b = 0; b < s.batch; ++b) {
    const Tensor q1 = take(dev, *blk.q.tensor, q, b), k1 = take(dev, *blk.k.tensor, k, b),
                 v1 = take(dev, *blk.v.tensor, v, b);
    Tensor o1 = take(dev, *blk.o, o, b), lse1 = take(dev, *blk.lse, lse, b);
    const SeqBlock qb{&q1, 0, blk.q.len, blk.q.positions}, kb{&k1, 0, blk.k.len, blk.k.positions},
        vb{&v1, 0, blk.k.len, blk.k.positions};
    run_by_document(docs, b, one, AttnFwdBlock{qb, kb, vb, &o1, &lse1}, kernel);
    put(dev, *blk.o, o, b, o1);
    put(dev, *blk.lse, lse, b, lse1);
  }
}

void attn_bwd_by_documents(Device& dev, const AttnShape& s, const AttnBwdBlock& blk,
                           const AttnBwdKernel& kernel) {
  const DocumentBounds& docs = *s.documents;
  if (docs.rows_alike()) return run_by_document(docs, 0, without_documents(s, s.batch), blk, kernel);
  const AttnShape one = without_documents(s, 1);
  const Widths w(s);
  const RowSlice q = rows_of(*blk.q.tensor, s.batch, 1, w.q, blk.q),
                 dout = rows_of(*blk.dout, s.batch, 1, w.o, blk.q),
                 dq = rows_of(*blk.dq, s.batch, 1, w.q, blk.q);
  const RowSlice lse = rows_of(*blk.lse, s.batch, s.heads, 1, blk.q, dev.lse_planes()),
                 delta = rows_of(*blk.delta, s.batch, s.heads, 1, blk.q);
  const RowSlice k = rows_of(*blk.k.tensor, s.batch, 1, w.k, blk.k),
                 v = rows_of(*blk.v.tensor, s.batch, 1, w.v, blk.v),
                 dk = rows_of(*blk.dk, s.batch, 1, w.k, blk.k), dv = rows_of(*blk.dv, s.batch, 1, w.v, blk.k);
  for (int b = 0; b < s.batch; ++b) {
    const Tensor q1 = take(dev, *blk.q.tensor, q, b), k1 = take(dev, *blk.k.tensor, k, b),
                 v1 = take(dev, *blk.v.tensor, v, b), dout1 = take(dev, *blk.dout, dout, b),
                 lse1 = take(dev, *blk.lse, lse, b), delta1 = take(dev, *blk.delta, delta, b);
    Tensor dq1 = take(dev, *blk.dq, dq, b), dk1 = take(dev, *blk.dk, dk, b), dv1 = take(dev, *blk.dv, dv, b);
    const SeqBlock qb{&q1, 0, blk.q.len, blk.q.positions}, kb{&k1, 0, blk.k.len, blk.k.positions},
        vb{&v1, 0, blk.k.len, blk.k.positions};
    run_by_document(docs, b, one, AttnBwdBlock{qb, kb, vb, &dout1, &lse1, &delta1, &dq1, &dk1, &dv1}, kernel);
    put(dev, *blk.dq, dq, b, dq1);
    put(dev, *blk.dk, dk, b, dk1);
    put(dev, *blk.dv, dv, b, dv1);
  }
}

}  // namespace minictx
