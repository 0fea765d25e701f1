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

bool AdmissionGate::close_locked() {
  if (closed_ || broken_) return false;
  if (!attach_syn_drop(fd_)) {
    broken_ = true;
    static std::once_flag warned;
    std::call_once(warned, [] {
      spdlog::warn(
          "admission gate: SO_ATTACH_FILTER failed ({}); overload is handled by the "
          "listener pause alone (limits.max_queue_wait)",
          std::strerror(errno));
    });
    return false;
  }
  closed_ = true;
  return true;
}

bool AdmissionGate::open_locked() {
  if (!closed_) return false;
  int unused = 0;  // the kernel wants an int-sized option value even here
  if (::setsockopt(fd_, SOL_SOCKET, SO_DETACH_FILTER, &unused, sizeof unused) != 0 &&
      errno != ENOENT) {
    spdlog::error("admission gate: SO_DETACH_FILTER: {}", std::strerror(errno));
    return false;  // still closed: the next accept tries again
  }
  closed_ = false;
  return true;
}

void AdmissionGate::count_locked(rt::TimePoint now) {
  ++accepts_;
  if (window_start_ == rt::TimePoint{}) window_start_ = now;
  if (now - window_start_ >= kStaleWindow) {
    rate_ = 0;  // idle or stopped: unknown until a window of real accepts ends
  } else if (now - window_start_ >= kWindow) {
    const double window_s = std::chrono::duration<double>(now - window_start_).count();
    const double measured = accepts_ / window_s;
    rate_ = rate_ == 0 ? measured : (rate_ + measured) / 2;  // smoothed over a few windows
  } else {
    return;
  }
  window_start_ = now;
  accepts_ = 0;
}

int AdmissionGate::decide_locked(unsigned queued, rt::Duration target, rt::TimePoint now) {
  if (queued == 0) {
    backlog_since_ = {};
  } else if (backlog_since_ == rt::TimePoint{}) {
    backlog_since_ = now;
  }
  if (rate_ == 0) return 0;
  const double predicted_s = queued / rate_;
  const double target_s = std::chrono::duration<double>(target).count();
  const bool standing = queued != 0 && now - backlog_since_ >= kWindow;
  if (!closed_ && predicted_s > target_s && standing) return close_locked() ? 1 : 0;
  if (closed_ && predicted_s < target_s / 2) return open_locked() ? -1 : 0;
  return 0;
}

int AdmissionGate::steer(unsigned queued, rt::Duration target, rt::TimePoint now) {
  std::lock_guard lock(mutex_);
  count_locked(now);
  return decide_locked(queued, target, now);
}

int AdmissionGate::steer_sampled(rt::Duration target, rt::TimePoint now) {
  std::lock_guard lock(mutex_);
  count_locked(now);
  if (sampled_ != rt::TimePoint{} && now - sampled_ < kSample) return 0;
  sampled_ = now;
  // A getsockopt under the mutex: short, and the mutex is only this socket's acceptors'.
  return decide_locked(accept_queue_length(fd_), target, now);
}

bool AdmissionGate::open() {
  std::lock_guard lock(mutex_);
  return open_locked();
}

bool AdmissionGate::is_closed() {
  std::lock_guard lock(mutex_);
  return closed_;
}

unsigned accept_queue_length(int fd) {
  tcp_info ti{};
  socklen_t len = sizeof ti;
  // On a listener, tcpi_unacked is its accept queue's length.
  return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 ? ti.tcpi_unacked : 0;
}

}  // namespace weft::http
