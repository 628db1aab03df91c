#include "comm/mpi_comm.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <thread>

#include "comm/watchdog.hpp"
#include "core/error.hpp"
#include "core/fault_seam.hpp"
#include "core/half_float.hpp"

namespace minictx {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fail("rank " + std::to_string(rank) + ": " + call + " failed: " + std::string(text, size_t(len)));
}

namespace {

int as_int_count(int64_t count) {
  require(count >= 0 && count <= INT_MAX,
          "message of " + std::to_string(count) + " elements exceeds MPI's int count");
  return int(count);
}

// A byte count as MPI elements: the widest unsigned integer that divides it, so that a
// message of floats may be as large as before (2^31 four-byte words).
struct Units {
  MPI_Datatype type;
  int count;
};
Units units_of(int64_t bytes) {
  if (bytes % 4 == 0) return {MPI_UINT32_T, as_int_count(bytes / 4)};
  if (bytes % 2 == 0) return {MPI_UINT16_T, as_int_count(bytes / 2)};
  return {MPI_BYTE, as_int_count(bytes)};
}

// MPI has no 16-bit float sum: a user operation widens to fp32, adds and rounds back.
template <DType T>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = half_float::narrow(half_float::widen(a[i], T) + half_float::widen(b[i], T), T);
}

// Made on first use (after MPI_Init); they live until MPI_Finalize.
template <DType T>
MPI_Op sum_op_16bit() {
  static const MPI_Op op = [] {
    MPI_Op made;
    check_mpi(MPI_Op_create(sum_16bit<T>, /*commute=*/1, &made), "MPI_Op_create");
    return made;
  }();
  return op;
}

// The MPI type and sum for elements of `type`.
std::pair<MPI_Datatype, MPI_Op> sum_of(DType type) {
  switch (type) {
    case DType::bf16:
      return {MPI_UINT16_T, sum_op_16bit<DType::bf16>()};
    case DType::f16:
      return {MPI_UINT16_T, sum_op_16bit<DType::f16>()};
    case DType::f32:
      break;
  }
  return {MPI_FLOAT, MPI_SUM};
}

}  // namespace

std::string MpiComm::describe_peers(int dst, int src) const {
  if (dst >= 0)
    return "send to rank " + std::to_string(world_rank_of(dst)) + ", receive from rank " +
           std::to_string(world_rank_of(src));
  std::string ranks;
  for (int r = 0; r < size_ && r < 8; ++r) ranks += (r ? "," : "") + std::to_string(world_rank_of(r));
  return "group of " + std::to_string(size_) + " ranks (" + ranks + (size_ > 8 ? ",..." : "") + ")";
}

// Every wait goes through here, under the watchdog (comm/watchdog.hpp): a lost or stopped
// peer ends the job instead of its allocation. Portable MPI-3: nonblocking calls and
// MPI_Testall only. On a node with more ranks than cores long waits sleep
// rather than yield (comm/watchdog.hpp). A ring shift also answers the test seam's transfer fault, as NCCL's
// asynchronous error would come.
void MpiComm::complete(MPI_Request* reqs, int n, const char* call, int dst, int src) const {
  watchdog::Watch w;
  w.call = call;
  w.peers = [=] { return describe_peers(dst, src); };
  w.done = [=] {
    int done = 0;
    check_mpi(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE), call);
    return done != 0;
  };
  if (dst >= 0)
    w.fault = [] {
      return fault_seam::fires(fault_seam::Stage::shift) ? fault_seam::injected("the transfer failed")
                                                         : std::string();
    };
  w.oversubscribed = oversubscribed_;
  watchdog::wait(w);
}

MpiComm::MpiComm(MPI_Comm comm, Topology topology, std::shared_ptr<ByteCounter> bytes, bool owned)
    : Comm(topology, std::move(bytes)),
      comm_(comm),
      owned_(owned),
      oversubscribed_(unsigned(topology.ranks_here) > std::thread::hardware_concurrency()) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  int my_world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &my_world);
  world_ranks_.resize(size_t(size_));
  MPI_Request req;
  check_mpi(MPI_Iallgather(&my_world, 1, MPI_INT, world_ranks_.data(), 1, MPI_INT, comm_, &req),
            "MPI_Iallgather");
  complete(&req, 1, "MPI_Iallgather of the world ranks");
}

MpiComm::~MpiComm() {
  if (owned_) MPI_Comm_free(&comm_);
}

// MPI's default handler aborts inside the failing call with a message of its own, which
// would make check_mpi dead code. The Comm works on a duplicate of the world with
// MPI_ERRORS_RETURN (inherited by every split), so a failed call becomes one line naming
// the rank and the call (check_mpi), and cli_main then aborts every rank. The
// application's own MPI_COMM_WORLD calls keep the default: they have no line to add.
// The duplicate and the node shape are made once, at the first call, which every rank
// makes: a launch of many points (verify) creates no communicator per point, and the
// collectives that create one cost most when ranks outnumber cores. The duplicate is
// never freed (MPI_Finalize does it): the GPU comms keep using its handle after this
// MpiComm is gone.
std::unique_ptr<MpiComm> MpiComm::world(int ranks_per_node) {
  struct Shape {
    MPI_Comm comm = MPI_COMM_NULL;
    int size = 1, here = 1, rank_here = 0, smallest_node = 1;
  };
  static const Shape shape = [] {
    Shape s;
    MPI_Comm_dup(MPI_COMM_WORLD, &s.comm);
    MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN);
    MPI_Comm_size(s.comm, &s.size);
    MPI_Comm node;
    check_mpi(MPI_Comm_split_type(s.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type");
    MPI_Comm_size(node, &s.here);
    MPI_Comm_rank(node, &s.rank_here);
    MPI_Comm_free(&node);
    // Nodes of unequal size: the smallest, so that no two nodes are merged.
    check_mpi(MPI_Allreduce(&s.here, &s.smallest_node, 1, MPI_INT, MPI_MIN, s.comm), "MPI_Allreduce");
    return s;
  }();
  Topology topo{shape.size, ranks_per_node > 0 ? ranks_per_node : shape.smallest_node, shape.here,
                shape.rank_here};
  return std::make_unique<MpiComm>(shape.comm, topo, std::make_shared<ByteCounter>(), false);
}

ShiftHandle MpiComm::exchange_start(const void* send, int64_t send_bytes, int dst, void* recv,
                                    int64_t recv_bytes, int src) {
  std::unique_ptr<TransferRuleCheck> check;
  if (kCheckTransferRules) {
    check = std::make_unique<TransferRuleCheck>(send, send_bytes, recv, recv_bytes);
    recv = check->landing();
  }
  // A direction not posted stays a null request, which the wait passes over; the slot
  // stays taken until the wait.
  std::vector<MPI_Request> reqs(2, MPI_REQUEST_NULL);
  if (recv_bytes > 0) {
    const Units u = units_of(recv_bytes);
    check_mpi(MPI_Irecv(recv, u.count, u.type, src, 0, comm_, &reqs[0]), "MPI_Irecv");
  }
  if (send_bytes > 0) {
    const Units u = units_of(send_bytes);
    check_mpi(MPI_Isend(send, u.count, u.type, dst, 0, comm_, &reqs[1]), "MPI_Isend");
    count_sent(dst, double(send_bytes));
  }
  size_t slot = 0;
  while (slot < pending_.size() && !pending_[slot].empty()) ++slot;
  if (slot == pending_.size()) {
    pending_.emplace_back();
    shift_peers_.emplace_back();
    shift_checks_.emplace_back();
  }
  pending_[slot] = std::move(reqs);
  shift_peers_[slot] = {dst, src};
  shift_checks_[slot] = std::move(check);
  return {int(slot)};
}

void MpiComm::wait(ShiftHandle& handle) {
  require(handle.slot >= 0 && size_t(handle.slot) < pending_.size(), "wait on a shift that was not started");
  const size_t slot = size_t(handle.slot);
  auto& reqs = pending_[slot];
  complete(reqs.data(), int(reqs.size()), "MPI_Waitall of a ring shift", shift_peers_[slot].first,
           shift_peers_[slot].second);
  reqs.clear();
  handle.slot = -1;
  if (const auto check = std::move(shift_checks_[slot])) check->finish();
}

void MpiComm::all_to_all(const void* send, void* recv, int64_t bytes_per_rank) {
  const Units u = units_of(bytes_per_rank);
  MPI_Request req;
  check_mpi(MPI_Ialltoall(send, u.count, u.type, recv, u.count, u.type, comm_, &req), "MPI_Ialltoall");
  complete(&req, 1, "MPI_Ialltoall");
  count_to_all_peers(double(bytes_per_rank));
}

void MpiComm::all_gather(const void* send, void* recv, int64_t bytes_per_rank) {
  const Units u = units_of(bytes_per_rank);
  MPI_Request req;
  check_mpi(MPI_Iallgather(send, u.count, u.type, recv, u.count, u.type, comm_, &req), "MPI_Iallgather");
  complete(&req, 1, "MPI_Iallgather");
  count_to_all_peers(double(bytes_per_rank));
}

// All-reduce and reduce-scatter are counted as the bandwidth-optimal ring algorithm
// sends them: 2(P−1)/P and (P−1)/P of the buffer, spread evenly over the peers. The
// buffers' reductions are all posted before one wait, so they progress together.
SumHandle MpiComm::start_sum(const std::vector<ReduceBuffer>& buffers) {
  std::vector<MPI_Request> reqs(buffers.size());
  std::vector<std::unique_ptr<TransferRuleCheck>> checks;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto [mpi_type, op] = sum_of(buffers[i].type);
    const int64_t bytes = buffers[i].count * element_bytes(buffers[i].type);
    void* data = buffers[i].data;
    if (kCheckTransferRules)
      data = checks.emplace_back(std::make_unique<TransferRuleCheck>(data, bytes))->landing();
    check_mpi(
        MPI_Iallreduce(MPI_IN_PLACE, data, as_int_count(buffers[i].count), mpi_type, op, comm_, &reqs[i]),
        "MPI_Iallreduce");
    count_to_all_peers(2.0 * double(bytes) / size_);
  }
  size_t slot = 0;
  while (slot < sums_.size() && !sums_[slot].empty()) ++slot;
  if (slot == sums_.size()) {
    sums_.emplace_back();
    sum_checks_.emplace_back();
  }
  sums_[slot] = std::move(reqs);
  sum_checks_[slot] = std::move(checks);
  return {int(slot)};
}

void MpiComm::finish_sum(SumHandle& handle) {
  require(size_t(handle.slot) < sums_.size() && !sums_[size_t(handle.slot)].empty(),
          "wait on a sum that was not started");
  const size_t slot = size_t(handle.slot);
  auto& reqs = sums_[slot];
  complete(reqs.data(), int(reqs.size()), "MPI_Iallreduce");
  reqs.clear();
  for (const auto& check : std::exchange(sum_checks_[slot], {})) check->finish();
}

void MpiComm::sum_doubles(double* data, int64_t count) {
  MPI_Request req;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data, as_int_count(count), MPI_DOUBLE, MPI_SUM, comm_, &req),
            "MPI_Iallreduce");
  complete(&req, 1, "MPI_Iallreduce");
  count_to_all_peers(2.0 * double(count) * sizeof(double) / size_);
}

void MpiComm::reduce_scatter_sum(const void* send, void* recv, int64_t count_per_rank, DType type) {
  const auto [mpi_type, op] = sum_of(type);
  MPI_Request req;
  check_mpi(MPI_Ireduce_scatter_block(send, recv, as_int_count(count_per_rank), mpi_type, op, comm_, &req),
            "MPI_Ireduce_scatter_block");
  complete(&req, 1, "MPI_Ireduce_scatter_block");
  count_to_all_peers(double(count_per_rank) * double(element_bytes(type)));
}

void MpiComm::gather_doubles(const double* send, double* recv, int64_t count_per_rank) {
  const int n = as_int_count(count_per_rank);
  MPI_Request req;
  check_mpi(MPI_Iallgather(send, n, MPI_DOUBLE, recv, n, MPI_DOUBLE, comm_, &req), "MPI_Iallgather");
  complete(&req, 1, "MPI_Iallgather");
}

void MpiComm::barrier() {
  MPI_Request req;
  check_mpi(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
  complete(&req, 1, "MPI_Ibarrier");
}

// MPI_Comm_split's result, built from calls that wait through complete(): the colors and
// keys by a nonblocking all-gather, then MPI_Comm_create_group over the members alone. A
// blocking MPI_Comm_split spins inside MPI until the last rank arrives, which on a node
// with more ranks than cores takes the core from the ranks it waits for.
std::unique_ptr<Comm> MpiComm::split(int color, int key) {
  require(color >= 0, "MpiComm::split: a negative color");
  std::vector<int> all(size_t(2) * size_t(size_));
  const int mine[2] = {color, key};
  MPI_Request req;
  check_mpi(MPI_Iallgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm_, &req), "MPI_Iallgather");
  complete(&req, 1, "MPI_Iallgather of a split");
  // MPI_Comm_split's order: by key, ties by rank.
  std::vector<std::pair<int, int>> by_key;
  for (size_t r = 0; r < size_t(size_); ++r)
    if (all[2 * r] == color) by_key.emplace_back(all[2 * r + 1], int(r));
  std::sort(by_key.begin(), by_key.end());
  std::vector<int> members;
  members.reserve(by_key.size());
  for (const auto& [k, r] : by_key) members.push_back(r);
  MPI_Group group, sub_group;
  check_mpi(MPI_Comm_group(comm_, &group), "MPI_Comm_group");
  check_mpi(MPI_Group_incl(group, int(members.size()), members.data(), &sub_group), "MPI_Group_incl");
  MPI_Comm sub;
  check_mpi(MPI_Comm_create_group(comm_, sub_group, /*tag=*/0, &sub), "MPI_Comm_create_group");
  MPI_Group_free(&sub_group);
  MPI_Group_free(&group);
  MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
  return std::make_unique<MpiComm>(sub, topology(), bytes_shared(), true);
}

}  // namespace minictx
