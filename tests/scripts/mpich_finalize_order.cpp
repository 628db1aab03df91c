// Preloaded (LD_PRELOAD) into the MPICH ranks that hydra starts across the hosts of the
// cluster in a box (check_cluster_box.py): it gives MPICH 4.0's MPI_Finalize over UCX the
// order MPICH 4.2 has, so that the ranks can cross the hosts by TCP without a hang.
//
// Why: MPICH 4.0 (ch4:ucx) finalizes by closing every UCX endpoint in flush mode,
// progressing until its own closes complete, and then waiting in a blocking PMI barrier.
// UCX's TCP transport completes the flush of an endpoint that has sent anything only when
// the peer acknowledges it (a zero-length PUT that the peer's progress answers). A rank
// whose closes completed waits in the PMI barrier without progress, so a peer whose flush
// reaches it later waits for the answer forever: MPI_Finalize hangs (over shared memory
// flushes complete locally and nothing hangs). MPICH 4.2 waits in a PMI barrier first,
// so every rank is inside MPI_Finalize, progressing, before any endpoint is flushed. This
// does the same: a PMI-1 barrier (hydra's protocol on PMI_FD) before the first
// ucp_disconnect_nb, which MPICH calls only in MPI_Finalize.
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void fail(const char* what) {
  std::fputs("mpich_finalize_order: ", stderr);
  std::fputs(what, stderr);
  std::fputs("\n", stderr);
  std::abort();
}

void write_all(int fd, const std::string& text) {
  std::size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::write(fd, text.data() + sent, text.size() - sent);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      fail("cannot write to the PMI socket");
    }
    sent += static_cast<std::size_t>(n);
  }
}

// One reply line, read a byte at a time: nothing after it is ours to consume.
std::string read_line(int fd) {
  std::string line;
  char c = 0;
  while (true) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n != 1) {
      fail("the PMI socket closed before the barrier ended");
    }
    if (c == '\n') {
      return line;
    }
    line += c;
  }
}

void pmi_barrier() {
  const char* fd_text = std::getenv("PMI_FD");
  if (fd_text == nullptr) {
    fail("no PMI_FD: preload this only into ranks that hydra starts");
  }
  const int fd = static_cast<int>(std::strtol(fd_text, nullptr, 10));
  write_all(fd, "cmd=barrier_in\n");
  const std::string reply = read_line(fd);
  if (reply.rfind("cmd=barrier_out", 0) != 0) {
    fail(("unexpected PMI barrier reply: " + reply).c_str());
  }
}

}  // namespace

// UCX's pointer types, as the opaque pointers they are to this file (no UCX headers needed).
extern "C" void* ucp_disconnect_nb(void* endpoint) {
  using Disconnect = void* (*)(void*);
  static const auto next = reinterpret_cast<Disconnect>(dlsym(RTLD_NEXT, "ucp_disconnect_nb"));
  static bool all_in_finalize = false;
  if (next == nullptr) {
    fail("no ucp_disconnect_nb after this library");
  }
  if (!all_in_finalize) {
    pmi_barrier();
    all_in_finalize = true;
  }
  return next(endpoint);
}
