// Tests server/admission_gate on real loopback sockets: closed, the listener's filter drops new
// handshakes (a connect does not complete) while established connections and queued ones
// keep working; open again, connects complete. The gate closes only when the wait it
// predicts (queue length / measured accept rate) passes the target, and opens under half of
// it. No wall-clock assertion: the decision takes explicit times, and the dropped handshake
// is checked by the listener's queue, not by how long a connect takes.
#include "server/net/admission_gate.hpp"

#include <chrono>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/net/listener.hpp"

namespace weft::http {
namespace {

using std::chrono::milliseconds;

struct Loopback {
  int listener = open_listener({"127.0.0.1", 0, false}, 64, false);
  AdmissionGate gate{listener};
  sockaddr_in addr{};

  Loopback() {
    socklen_t len = sizeof addr;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  }
  ~Loopback() { ::close(listener); }

  // Starts a non-blocking connect; returns the socket.
  int start_connect() const {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    return fd;
  }

  // Whether `fd`'s connect completed within `ms` milliseconds (writable without error).
  static bool connected(int fd, int ms) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, ms) != 1) return false;
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    return err == 0;
  }
};

// Makes `gate` measure a service rate of 100 accepts per window (1,000/s) from
// `t0`, with `queued` connections waiting at every accept (a standing queue when not 0), and
// steers it once more at t0 + kWindow; returns what that last call did.
int steer_at_rate(AdmissionGate& gate, unsigned queued, rt::Duration target,
                  rt::TimePoint t0 = rt::now()) {
  for (int i = 0; i < 100; ++i) gate.steer(queued, target, t0);
  return gate.steer(queued, target, t0 + AdmissionGate::kWindow);
}

TEST(AdmissionGate, ClosesPastTheTargetAndDropsOnlyNewHandshakes) {
  Loopback lo;
  // A connection established and accepted (the first in the queue), and one still queued
  // when the gate closes.
  int established = lo.start_connect();
  ASSERT_TRUE(Loopback::connected(established, 5000));
  int queued = lo.start_connect();
  ASSERT_TRUE(Loopback::connected(queued, 5000));
  while (accept_queue_length(lo.listener) < 2) std::this_thread::sleep_for(milliseconds(1));
  int served = ::accept4(lo.listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(served, 0);

  // 1,000 queued at 1,000 accepts/s: a second's wait predicted, past a 500 ms target.
  EXPECT_EQ(steer_at_rate(lo.gate, 1000, milliseconds(500)), 1);
  EXPECT_TRUE(lo.gate.is_closed());

  int refused = lo.start_connect();
  EXPECT_FALSE(Loopback::connected(refused, 300)) << "a handshake went through a closed gate";
  EXPECT_EQ(accept_queue_length(lo.listener), 1u);  // only the one queued before

  // What was under way keeps working: the established connection carries data both ways,
  // and the queued one is still there to accept.
  ASSERT_EQ(::write(served, "x", 1), 1);
  char c = 0;
  pollfd p{established, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  ASSERT_EQ(::recv(established, &c, 1, 0), 1);
  EXPECT_EQ(c, 'x');
  int late = ::accept4(lo.listener, nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_GE(late, 0);

  // Open again: the dropped client's retransmitted SYN (1 s later) and new ones get in.
  EXPECT_TRUE(lo.gate.open());
  EXPECT_FALSE(lo.gate.is_closed());
  int fresh = lo.start_connect();
  EXPECT_TRUE(Loopback::connected(fresh, 5000));
  EXPECT_TRUE(Loopback::connected(refused, 5000)) << "the retransmitted SYN was not let in";
  for (int fd : {queued, established, served, refused, late, fresh}) ::close(fd);
}

TEST(AdmissionGate, OpensUnderHalfTheTargetNotBefore) {
  Loopback lo;
  const auto target = milliseconds(500);
  const rt::TimePoint t0 = rt::now();
  EXPECT_EQ(steer_at_rate(lo.gate, 600, target, t0), 1);  // 600 queued: ~600 ms predicted
  const rt::TimePoint t = t0 + AdmissionGate::kWindow;    // the same window
  EXPECT_EQ(lo.gate.steer(400, target, t), 0);            // ~400 ms: still closed
  EXPECT_TRUE(lo.gate.is_closed());
  EXPECT_EQ(lo.gate.steer(200, target, t), -1);  // ~200 ms: opens
  EXPECT_FALSE(lo.gate.is_closed());
}

TEST(AdmissionGate, ClosesOnlyOnAQueueThatStandsForAWindow) {
  Loopback lo;
  const auto target = milliseconds(500);
  const rt::TimePoint t0 = rt::now();
  EXPECT_EQ(steer_at_rate(lo.gate, 0, target, t0), 0);  // ~1,000/s, nothing queued
  const rt::TimePoint t = t0 + AdmissionGate::kWindow;
  // A burst: 600 queued (~600 ms predicted) that drains within the window stays in.
  EXPECT_EQ(lo.gate.steer(600, target, t), 0);
  EXPECT_EQ(lo.gate.steer(600, target, t + milliseconds(50)), 0);
  EXPECT_EQ(lo.gate.steer(0, target, t + milliseconds(60)), 0);
  EXPECT_EQ(lo.gate.steer(600, target, t + milliseconds(99)), 0);
  EXPECT_FALSE(lo.gate.is_closed());
  // Queued at every look for a whole window since (t + 99 ms): a standing queue, closed.
  const rt::TimePoint later = t + milliseconds(99) + AdmissionGate::kWindow;
  EXPECT_EQ(lo.gate.steer(600, target, later), 1);
}

TEST(AdmissionGate, ABurstAfterAnIdleSpellDoesNotClose) {
  Loopback lo;
  const auto target = milliseconds(500);
  const rt::TimePoint t0 = rt::now();
  // Sparse traffic: one accept every 50 ms measures 20/s, which is arrivals, not service.
  for (int i = 0; i <= 20; ++i) {
    lo.gate.steer(0, target, t0 + i * milliseconds(50));
  }
  // An idle second, then a burst: 40 queued would predict 2 s at 20/s, and
  // far more at the rate an idle window measures. The stale window leaves the rate unknown,
  // and the burst drains before it stands: nothing closes.
  const rt::TimePoint burst = t0 + milliseconds(2000);
  EXPECT_EQ(lo.gate.steer(40, target, burst), 0);
  EXPECT_EQ(lo.gate.steer(20, target, burst + milliseconds(1)), 0);
  EXPECT_EQ(lo.gate.steer(0, target, burst + milliseconds(2)), 0);
  EXPECT_FALSE(lo.gate.is_closed());
}

TEST(AdmissionGate, SampledSteeringReadsTheQueueAtMostOncePerSample) {
  Loopback lo;
  const auto target = milliseconds(1);
  const rt::TimePoint t0 = rt::now();
  EXPECT_EQ(steer_at_rate(lo.gate, 0, target, t0), 0);  // about 1,000 accepts/s measured
  int a = lo.start_connect();
  int b = lo.start_connect();
  while (accept_queue_length(lo.listener) < 2) std::this_thread::sleep_for(milliseconds(1));
  // Two queued at 500-1,000/s predict 2-4 ms, past the 1 ms target. The first sample sees
  // the queue; within kSample of it nothing is read; a window later it stands, and closes.
  const rt::TimePoint t = t0 + AdmissionGate::kWindow;
  EXPECT_EQ(lo.gate.steer_sampled(target, t), 0);
  EXPECT_EQ(lo.gate.steer_sampled(target, t + AdmissionGate::kSample / 2), 0);
  const rt::TimePoint stands = t + AdmissionGate::kWindow;
  EXPECT_EQ(lo.gate.steer_sampled(target, stands), 1);
  EXPECT_TRUE(lo.gate.open());
  // Within kSample of that read the queue is not read again: no decision, the gate stays open.
  const rt::TimePoint half = stands + AdmissionGate::kSample / 2;
  EXPECT_EQ(lo.gate.steer_sampled(target, half), 0);
  EXPECT_FALSE(lo.gate.is_closed());
  // A sample later it is, and the same queue closes the gate again.
  const rt::TimePoint next = stands + AdmissionGate::kSample;
  EXPECT_EQ(lo.gate.steer_sampled(target, next), 1);
  for (int fd : {a, b}) ::close(fd);
}

TEST(AdmissionGate, NoDecisionBeforeARateIsMeasured) {
  Loopback lo;
  // The first window has not ended: however long the queue, the gate stays open.
  EXPECT_EQ(lo.gate.steer(100000, milliseconds(1), rt::now()), 0);
  EXPECT_FALSE(lo.gate.is_closed());
}

}  // namespace
}  // namespace weft::http
