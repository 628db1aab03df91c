#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/topology.hpp"

namespace minictx {

// Bytes this rank sent, split by whether the peer sits on the same node. Shared by a
// communicator and every sub-group split from it.
struct ByteCounter {
  double intra = 0;
  double inter = 0;
  void reset() { intra = inter = 0; }
};

// A started ring shift; complete it with Comm::wait.
struct ShiftHandle {
  int slot = -1;
};

// `count` elements of `type` at `data`: one buffer of a grouped all-reduce. 16-bit
// elements are summed in fp32 and rounded back at each step of the reduction.
struct ReduceBuffer {
  void* data;
  int64_t count;
  DType type = DType::f32;
};

// A started grouped sum; complete it with Comm::wait_sum. An empty handle (slot −1)
// is a sum with nothing to do.
struct SumHandle {
  int slot = -1;
};

// The communication the backends and the model use. Buffers are in the memory of the
// device the communicator was made for. Data movement (shifts, all-to-all, all-gather)
// is sized in bytes, whatever the buffers hold; sums in elements of their type. Byte
// accounting follows docs/design.md, "Metrics" (bytes sent).
class Comm {
 public:
  virtual ~Comm() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int world_rank_of(int rank) const = 0;

  // Post a non-blocking send of `bytes` to `dst` and a receive into `recv` from `src`;
  // both complete in wait(). Posting both before waiting makes any ring deadlock-free,
  // whatever its size. Until wait() returns, both buffers belong to the transfer: the
  // caller frees neither, writes neither, and no kernel it issues in between reads
  // `recv`. On a GPU the transfer runs on a stream of its own beside those kernels (NCCL's
  // comm stream; the staged comm's copy back into `recv`), ordered with the compute
  // stream only at shift_start and wait. Debug builds hold every caller to this on the
  // host comm (comm/transfer_rule_check.hpp).
  ShiftHandle shift_start(const void* send, void* recv, int64_t bytes, int dst, int src) {
    return exchange_start(send, bytes, dst, recv, bytes, src);
  }
  // shift_start with a size for each direction: send_bytes to dst, recv_bytes from src. A
  // direction of 0 bytes is not posted (a ring step after which a block stops travelling,
  // while the previous rank's block still arrives), so both ends must agree on its size.
  virtual ShiftHandle exchange_start(const void* send, int64_t send_bytes, int dst, void* recv,
                                     int64_t recv_bytes, int src) = 0;
  virtual void wait(ShiftHandle& handle) = 0;

  // recv[p·bytes ...] = what rank p sent in its send[rank·bytes ...].
  virtual void all_to_all(const void* send, void* recv, int64_t bytes_per_rank) = 0;
  virtual void all_gather(const void* send, void* recv, int64_t bytes_per_rank) = 0;
  // Sums over the group, in place. A group of one has nothing to add: these return at
  // once, in every comm, so a one-rank run stages nothing through the host, launches
  // nothing and counts no byte.
  void all_reduce_sum(float* data, int64_t count) {
    all_reduce_sum(std::vector<ReduceBuffer>{{data, count}});
  }
  void all_reduce_sum(double* data, int64_t count) {
    if (size() > 1) sum_doubles(data, count);
  }
  // Each buffer summed as above, issued together (a layer's weight gradients): one wait
  // on MPI, one round trip through the host on the staged comm, one NCCL group.
  void all_reduce_sum(const std::vector<ReduceBuffer>& buffers) {
    SumHandle h = all_reduce_sum_start(buffers);
    wait_sum(h);
  }
  // The same, started now and completed by wait_sum, so that it can progress while the
  // caller computes (the backward of the layers below): the buffers must not be touched
  // in between. NCCL runs it on a stream of its own; MPI progresses it in the MPI calls
  // made meanwhile; the staged comm copies out now and back in wait_sum. Debug builds
  // check this rule as shift_start's.
  SumHandle all_reduce_sum_start(const std::vector<ReduceBuffer>& buffers) {
    return size() > 1 && !buffers.empty() ? start_sum(buffers) : SumHandle{};
  }
  void wait_sum(SumHandle& handle) {
    if (handle.slot >= 0) finish_sum(handle);
    handle.slot = -1;
  }
  // recv = rank's chunk of the sum over the group of send (count_per_rank elements of
  // `type` per chunk), summed in at least fp32.
  virtual void reduce_scatter_sum(const void* send, void* recv, int64_t count_per_rank, DType type) = 0;
  // Bookkeeping (timings, verification): not counted in the byte totals.
  virtual void gather_doubles(const double* send, double* recv, int64_t count_per_rank) = 0;
  virtual void barrier() = 0;

  // Ranks with the same colour form a sub-group, ordered by key.
  virtual std::unique_ptr<Comm> split(int color, int key) = 0;

  const Topology& topology() const { return topology_; }
  // This group's size with the world's ranks per node: what a backend run on this group
  // splits (a sub-group's topology() still describes the whole world).
  Topology group_topology() const {
    return {size(), topology_.ranks_per_node, topology_.ranks_here, topology_.rank_here};
  }
  ByteCounter& bytes() { return *bytes_; }
  bool same_node(int rank_a, int rank_b) const {
    return topology_.node_of(world_rank_of(rank_a)) == topology_.node_of(world_rank_of(rank_b));
  }

 protected:
  Comm(Topology topology, std::shared_ptr<ByteCounter> bytes)
      : topology_(topology), bytes_(std::move(bytes)) {}
  std::shared_ptr<ByteCounter> bytes_shared() const { return bytes_; }
  // Count `bytes` sent from this rank to `peer`.
  void count_sent(int peer, double bytes) {
    (same_node(rank(), peer) ? bytes_->intra : bytes_->inter) += bytes;
  }
  // Count `bytes_per_peer` to every other rank of the group.
  void count_to_all_peers(double bytes_per_peer) {
    for (int p = 0; p < size(); ++p)
      if (p != rank()) count_sent(p, bytes_per_peer);
  }

 private:
  // all_reduce_sum_start and wait_sum on a group of more than one rank.
  virtual SumHandle start_sum(const std::vector<ReduceBuffer>& buffers) = 0;
  virtual void finish_sum(SumHandle& handle) = 0;
  virtual void sum_doubles(double* data, int64_t count) = 0;

  Topology topology_;
  std::shared_ptr<ByteCounter> bytes_;
};

}  // namespace minictx
