#include "server/net/admission_gate.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

namespace weft::http {
namespace {

// The filter: a TCP socket's filter sees the segment from its TCP header on, whose byte 13
// holds the flags. A SYN without ACK is a new handshake: dropped (return 0). Anything else is
// kept whole. Hand-written (five instructions) because no Debian library assembles classic
// BPF, and libbpf's eBPF would need privileges a socket filter does not.
constexpr unsigned kTcpFlagsOffset = 13;
constexpr unsigned kSyn = 0x02;
constexpr unsigned kAck = 0x10;

bool attach_syn_drop(int fd) {
  static sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, kTcpFlagsOffset),
      BPF_STMT(BPF_ALU | BPF_AND | BPF_K, kSyn | kAck),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kSyn, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, 0),           // a new handshake: drop
      BPF_STMT(BPF_RET | BPF_K, 0xffffffff),  // the rest: keep
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  return ::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) == 0;
}

}  // namespace

std::mutex& AdmissionGate::mutex() {
  static std::mutex m;
  return m;
}

std::unordered_map<int, AdmissionGate::State>& AdmissionGate::states() {
  static std::unordered_map<int, State> s;
  return s;
}

bool AdmissionGate::close_locked(int fd, State& s) {
  if (s.closed || s.broken) return false;
  if (!attach_syn_drop(fd)) {
    s.broken = true;
    static std::once_flag warned;
    std::call_once(warned, [] {
      spdlog::warn(
          "admission gate: SO_ATTACH_FILTER failed ({}); overload is handled by the "
          "listener pause alone (limits.max_queue_wait)",
          std::strerror(errno));
    });
    return false;
  }
  s.closed = true;
  return true;
}

bool AdmissionGate::open_locked(int fd, State& s) {
  if (!s.closed) return false;
  int unused = 0;  // the kernel wants an int-sized option value even here
  if (::setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &unused, sizeof unused) != 0 &&
      errno != ENOENT) {
    spdlog::error("admission gate: SO_DETACH_FILTER: {}", std::strerror(errno));
    return false;  // still closed: the next accept tries again
  }
  s.closed = false;
  return true;
}

void AdmissionGate::count_locked(State& s, rt::TimePoint now) {
  ++s.accepts;
  if (s.window_start == rt::TimePoint{}) s.window_start = now;
  if (now - s.window_start >= kStaleWindow) {
    s.rate = 0;  // idle or stopped: unknown until a window of real accepts ends
  } else if (now - s.window_start >= kWindow) {
    const double window_s = std::chrono::duration<double>(now - s.window_start).count();
    const double measured = s.accepts / window_s;
    s.rate = s.rate == 0 ? measured : (s.rate + measured) / 2;  // smoothed over a few windows
  } else {
    return;
  }
  s.window_start = now;
  s.accepts = 0;
}

int AdmissionGate::decide_locked(int fd, State& s, unsigned queued, rt::Duration target,
                                 rt::TimePoint now) {
  if (queued == 0) {
    s.backlog_since = {};
  } else if (s.backlog_since == rt::TimePoint{}) {
    s.backlog_since = now;
  }
  if (s.rate == 0) return 0;
  const double predicted_s = queued / s.rate;
  const double target_s = std::chrono::duration<double>(target).count();
  const bool standing = queued != 0 && now - s.backlog_since >= kWindow;
  if (!s.closed && predicted_s > target_s && standing) return close_locked(fd, s) ? 1 : 0;
  if (s.closed && predicted_s < target_s / 2) return open_locked(fd, s) ? -1 : 0;
  return 0;
}

int AdmissionGate::steer(int fd, unsigned queued, rt::Duration target, rt::TimePoint now) {
  std::lock_guard lock(mutex());
  State& s = states()[fd];
  count_locked(s, now);
  return decide_locked(fd, s, queued, target, now);
}

int AdmissionGate::steer_sampled(int fd, rt::Duration target, rt::TimePoint now) {
  std::lock_guard lock(mutex());
  State& s = states()[fd];
  count_locked(s, now);
  if (s.sampled != rt::TimePoint{} && now - s.sampled < kSample) return 0;
  s.sampled = now;
  // A getsockopt under the mutex: short, and the mutex is only the acceptors' of this process.
  return decide_locked(fd, s, accept_queue_length(fd), target, now);
}

bool AdmissionGate::open(int fd) {
  std::lock_guard lock(mutex());
  auto it = states().find(fd);
  return it != states().end() && open_locked(fd, it->second);
}

bool AdmissionGate::is_closed(int fd) {
  std::lock_guard lock(mutex());
  auto it = states().find(fd);
  return it != states().end() && it->second.closed;
}

void AdmissionGate::forget(int fd) {
  std::lock_guard lock(mutex());
  states().erase(fd);
}

unsigned accept_queue_length(int fd) {
  tcp_info ti{};
  socklen_t len = sizeof ti;
  // On a listener, tcpi_unacked is its accept queue's length.
  return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 ? ti.tcpi_unacked : 0;
}

}  // namespace weft::http
