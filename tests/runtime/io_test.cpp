// Tests runtime/io on both backends: echo with 10k connections, deadlines, cancellation,
// SIGPIPE, EMFILE, file operations, the bound on io_uring's kernel workers, and epoll's
// edge-triggered connections (ready bits, generations) and one accept per poll.
#include "runtime/io.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/io_driver_internal.hpp"
#include "runtime/io_epoch.hpp"
#include "runtime/latch.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/semaphore.hpp"

#include "tests/runtime/test_scale.hpp"

namespace weft::rt {
namespace {

using namespace std::chrono_literals;

int count_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (readdir(d)) ++n;
  closedir(d);
  return n - 3;  // ".", "..", and the dir's own fd
}

int count_threads() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  while (readdir(d)) ++n;
  closedir(d);
  return n - 2;
}

// Skips the calling test where io_uring cannot be set up (a container's seccomp profile).
#define SKIP_WITHOUT_IO_URING()                                                          \
  do {                                                                                   \
    if (!io_uring_usable()) GTEST_SKIP() << "io_uring cannot be set up on this machine"; \
  } while (0)

class IoTest : public ::testing::TestWithParam<IoBackendKind> {
 protected:
  void SetUp() override {
    if (GetParam() == IoBackendKind::io_uring) SKIP_WITHOUT_IO_URING();
  }
  RuntimeOptions opts(unsigned processors = 2, IoOptions io = {}) {
    io.backend = GetParam();
    RuntimeOptions o;
    o.processors = processors;
    o.make_driver = make_io_driver_factory(io);
    return o;
  }
};

// Listens on 127.0.0.1 with an ephemeral port; returns the fd and fills *port.
int listen_loopback(uint16_t* port, int backlog = 4096) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(fd, backlog), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return a;
}

int connect_to(uint16_t port, TimePoint deadline = kNoDeadline) {
  int fd = io::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  int rc = io::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a, deadline);
  if (rc < 0) {
    ::close(fd);
    return rc;
  }
  return fd;
}

// Serves echo on `lfd` until `stop` is cancelled; each connection on its own fiber. With
// `peak`, keeps there the most connections that were open at once.
void echo_server(int lfd, CancelToken& stop, WaitGroup& conns,
                 std::atomic<int64_t>* peak = nullptr) {
  while (true) {
    int c = io::accept(lfd, nullptr, nullptr, kNoDeadline, &stop);
    if (c < 0) {
      if (c == -ECANCELED) return;
      if (c == -EMFILE || c == -ENFILE) {
        sleep_for(1ms);
        continue;
      }
      ADD_FAILURE() << "accept: " << std::strerror(-c);
      return;
    }
    conns.add(1);
    if (peak) {
      int64_t open = conns.count(), seen = peak->load();
      while (open > seen && !peak->compare_exchange_weak(seen, open)) {
      }
    }
    spawn([c, &conns] {
      char buf[512];
      while (true) {
        int64_t n = io::recv(c, buf, sizeof buf);
        if (n <= 0) break;
        if (io::send_all(c, buf, static_cast<std::size_t>(n)) < 0) break;
      }
      io::close(c);
      conns.done();
    }).detach();
  }
}

TEST_P(IoTest, EchoWithTenThousandConnections) {
  // Both ends in one process would need 20k descriptors; the hard limit here is 20000, so
  // the clients run in a child process with a runtime of their own.
  rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  const int kConns = scaled(10'000);
  ASSERT_GE(rl.rlim_max, 10'200u) << "needs RLIMIT_NOFILE >= 10200";
  uint16_t port;
  int lfd = listen_loopback(&port);
  pid_t child = fork();
  if (child == 0) {
    int failures = 0;
    {
      Runtime rt(opts());
      rt.run([&] {
        std::atomic<int> bad{0};
        Latch all_connected(kConns);
        Latch all_echoed(kConns);
        WaitGroup done;
        done.add(kConns);
        for (int i = 0; i < kConns; ++i) {
          spawn([&, i] {
            int fd = -1;
            for (int attempt = 0; attempt < 50 && fd < 0; ++attempt) {
              fd = connect_to(port, now() + 20s);
              if (fd < 0) sleep_for(10ms);
            }
            all_connected.count_down();
            // The first failure is printed: a bare "client process failed" says nothing.
            auto fail = [&](const char* what, int64_t rc) {
              if (bad.fetch_add(1) == 0) {
                std::fprintf(stderr, "client %d: %s: %s\n", i, what,
                             rc < 0 ? std::strerror(static_cast<int>(-rc)) : "short");
              }
            };
            if (fd < 0) {
              fail("connect", fd);
              all_echoed.count_down();
              done.done();
              return;
            }
            all_connected.wait();  // every connection is open at the same time
            std::string msg = "hello " + std::to_string(i);
            char buf[64];
            int64_t rc = io::send_all(fd, msg.data(), msg.size());
            if (rc != static_cast<int64_t>(msg.size())) {
              fail("send", rc);
            } else if ((rc = io::recv(fd, buf, msg.size(), MSG_WAITALL, now() + 30s)) !=
                       static_cast<int64_t>(msg.size())) {
              fail("recv", rc);
            } else if (std::memcmp(buf, msg.data(), msg.size()) != 0) {
              fail("echo differs", 0);
            }
            // Every connection stays open until all have echoed, so the server holds all
            // of them at once.
            all_echoed.count_down();
            all_echoed.wait();
            io::close(fd);
            done.done();
          });
        }
        done.wait();
        failures = bad.load();
      });
    }
    _exit(failures == 0 ? 0 : 1);
  }
  Runtime rt(opts());
  std::atomic<int64_t> max_conns{0};
  rt.run([&] {
    CancelToken stop;
    WaitGroup conns;
    auto acceptor = spawn([&] { echo_server(lfd, stop, conns, &max_conns); });
    auto watcher = spawn([&] {
      while (true) {
        int st = 0;
        pid_t r = ::waitpid(child, &st, WNOHANG);
        if (r == child) {
          EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
              << "client process failed: status " << st;
          break;
        }
        sleep_for(5ms);
      }
    });
    watcher.join();
    stop.cancel();
    acceptor.join();
    conns.wait();
  });
  ::close(lfd);
  EXPECT_EQ(max_conns.load(), kConns) << "the server never held every connection at once";
}

TEST_P(IoTest, RecvDeadlineFiresNeverEarly) {
  Runtime rt(opts());
  rt.run([&] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    char b;
    auto start = now();
    EXPECT_EQ(io::recv(sv[0], &b, 1, 0, start + 20ms), -ETIMEDOUT);
    EXPECT_GE(now() - start, 20ms);
    // A later operation on the same fd still works.
    ASSERT_EQ(::write(sv[1], "x", 1), 1);
    EXPECT_EQ(io::recv(sv[0], &b, 1, 0, now() + 1s), 1);
    ::close(sv[0]);
    ::close(sv[1]);
  });
}

// Waits on one descriptor one after another (a wait ended by its event, by its deadline,
// by its event again), then on descriptors that reuse closed ones' numbers: epoll keeps a
// disarmed registration between waits and re-arms it, and must not be fooled by a number
// that now names another file (one processor, so every wait meets the same registrations).
TEST_P(IoTest, RepeatedWaitsAndReusedDescriptorNumbers) {
  Runtime rt(opts(1));
  rt.run([&] {
    for (int round = 0; round < 3; ++round) {
      int sv[2];
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
      char b = 0;
      for (int i = 0; i < 3; ++i) {
        auto writer = spawn([&] {
          sleep_for(2ms);
          ASSERT_EQ(::write(sv[1], "x", 1), 1);
        });
        EXPECT_EQ(io::recv(sv[0], &b, 1, 0, now() + 5s), 1) << "round " << round << " i " << i;
        writer.join();
        EXPECT_EQ(io::recv(sv[0], &b, 1, 0, now() + 3ms), -ETIMEDOUT);
      }
      ::close(sv[0]);
      ::close(sv[1]);  // the next round's pair most likely gets these numbers back
    }
  });
}

// recv_when_ready waits first, and still returns at once what is already there, the end of
// the stream, and its deadline.
TEST_P(IoTest, RecvWhenReadyGetsDataEofAndDeadline) {
  Runtime rt(opts());
  rt.run([&] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    char buf[8];
    ASSERT_EQ(::write(sv[1], "ab", 2), 2);
    EXPECT_EQ(io::recv_when_ready(sv[0], buf, sizeof buf, 0, now() + 5s), 2);
    auto writer = spawn([&] {
      sleep_for(2ms);
      ASSERT_EQ(::write(sv[1], "c", 1), 1);
    });
    EXPECT_EQ(io::recv_when_ready(sv[0], buf, sizeof buf, 0, now() + 5s), 1);
    EXPECT_EQ(buf[0], 'c');
    writer.join();
    auto start = now();
    EXPECT_EQ(io::recv_when_ready(sv[0], buf, sizeof buf, 0, start + 10ms), -ETIMEDOUT);
    EXPECT_GE(now() - start, 10ms);
    ::close(sv[1]);
    EXPECT_EQ(io::recv_when_ready(sv[0], buf, sizeof buf, 0, now() + 5s), 0);
    ::close(sv[0]);
  });
}

// Every receive stamps its fiber with the I/O epoch as read once its result was there
// (io_epoch.hpp): a stamp is never older than an epoch advanced before the bytes were sent,
// whether the receive waited for them (reaped) or found them at once; a fiber that has
// received nothing has no stamp, and a send leaves it as it was. Receives of one reaped
// batch share a stamp while nothing advances the epoch (what makes one look at a change
// queue serve a batch).
TEST_P(IoTest, StampsFollowTheResult) {
  Runtime rt(opts(1));
  rt.run([&] {
    spawn([] { EXPECT_EQ(io_stamp(), kNoIoStamp); }).join();
    int a[2], b[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, a), 0);
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, b), 0);
    char buf[8];
    const uint64_t before_data = advance_io_epoch();
    ASSERT_EQ(::write(a[1], "x", 1), 1);
    EXPECT_EQ(io::recv(a[0], buf, sizeof buf, 0, now() + 5s), 1);  // there at once
    EXPECT_GE(io_stamp(), before_data);
    EXPECT_NE(io_stamp(), kNoIoStamp);
    const uint64_t after_recv = io_stamp();
    advance_io_epoch();
    EXPECT_EQ(io::send(a[0], "w", 1, 0, now() + 5s), 1);
    EXPECT_EQ(io_stamp(), after_recv);
    EXPECT_EQ(::read(a[1], buf, sizeof buf), 1);
    // Two fibers wait; one write wakes both in one poll of this single processor.
    uint64_t stamps[2] = {};
    auto reader = [&](int fd, uint64_t* stamp) {
      char c;
      EXPECT_EQ(io::recv_when_ready(fd, &c, 1, 0, now() + 5s), 1);
      *stamp = io_stamp();
    };
    auto r0 = spawn([&] { reader(a[0], &stamps[0]); });
    auto r1 = spawn([&] { reader(b[0], &stamps[1]); });
    sleep_for(5ms);  // both parked
    const uint64_t before_batch = advance_io_epoch();
    std::thread writer([&] {
      ASSERT_EQ(::write(a[1], "y", 1), 1);
      ASSERT_EQ(::write(b[1], "z", 1), 1);
    });
    writer.join();  // both written before this processor polls again
    r0.join();
    r1.join();
    EXPECT_GE(stamps[0], before_batch);
    EXPECT_EQ(stamps[0], stamps[1]);
    for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
  });
}

TEST_P(IoTest, CancelFromAnotherFiber) {
  Runtime rt(opts());
  rt.run([&] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    CancelToken token;
    std::atomic<int64_t> result{1};
    auto reader = spawn([&] {
      char b;
      result = io::recv(sv[0], &b, 1, 0, kNoDeadline, &token);
    });
    sleep_for(5ms);
    token.cancel();
    reader.join();
    EXPECT_EQ(result.load(), -ECANCELED);
    char b;
    EXPECT_EQ(io::recv(sv[0], &b, 1, 0, kNoDeadline, &token), -ECANCELED);  // stays cancelled
    ::close(sv[0]);
    ::close(sv[1]);
  });
}

TEST_P(IoTest, OneTokenCancelsManyFibers) {
  Runtime rt(opts());
  rt.run([&] {
    CancelToken token;
    std::vector<int> fds;
    std::atomic<int> cancelled{0};
    std::vector<FiberHandle> hs;
    for (int i = 0; i < 20; ++i) {
      int sv[2];
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
      fds.push_back(sv[0]);
      fds.push_back(sv[1]);
      hs.push_back(spawn([&, fd = sv[0]] {
        char b;
        if (io::recv(fd, &b, 1, 0, kNoDeadline, &token) == -ECANCELED) cancelled.fetch_add(1);
      }));
    }
    sleep_for(5ms);
    token.cancel();
    for (auto& h : hs) h.join();
    EXPECT_EQ(cancelled.load(), 20);
    for (int fd : fds) ::close(fd);
  });
}

TEST_P(IoTest, WhenReadyRunsCallbackWithoutAParkedFiber) {
  Runtime rt(opts());
  rt.run([&] {
    constexpr int kWaits = 500;
    struct Slot {
      ReadyWait wait;
      int sv[2] = {-1, -1};
      std::atomic<int> result{1};
    };
    std::vector<std::unique_ptr<Slot>> slots;
    WaitGroup done;
    done.add(kWaits);
    for (int i = 0; i < kWaits; ++i) {
      auto s = std::make_unique<Slot>();
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, s->sv), 0);
      struct Ctx {
        Slot* slot;
        WaitGroup* done;
      };
      auto* ctx = new Ctx{s.get(), &done};
      ASSERT_EQ(io::when_ready(
                    s->wait, s->sv[0], POLLIN, kNoDeadline, nullptr,
                    [](void* arg, int result) {
                      auto* c = static_cast<Ctx*>(arg);
                      c->slot->result = result;
                      c->done->done();
                      delete c;
                    },
                    ctx),
                0);
      slots.push_back(std::move(s));
    }
    // Nothing is parked for these waits: only this fiber is alive.
    EXPECT_EQ(Processor::current()->runtime().live_fibers(), 1u);
    for (auto& s : slots) ASSERT_EQ(::write(s->sv[1], "x", 1), 1);
    done.wait();
    for (auto& s : slots) {
      EXPECT_TRUE(s->result.load() & POLLIN);
      ::close(s->sv[0]);
      ::close(s->sv[1]);
    }
  });
}

TEST_P(IoTest, WhenReadyTimesOutAndCancels) {
  Runtime rt(opts());
  rt.run([&] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    struct Out {
      std::atomic<int> result{1};
      Semaphore fired{0};
    } out;
    auto cb = [](void* arg, int result) {
      auto* o = static_cast<Out*>(arg);
      o->result = result;
      o->fired.release();
    };
    ReadyWait w;
    auto start = now();
    ASSERT_EQ(io::when_ready(w, sv[0], POLLIN, start + 20ms, nullptr, cb, &out), 0);
    out.fired.acquire();
    EXPECT_EQ(out.result.load(), -ETIMEDOUT);
    EXPECT_GE(now() - start, 20ms);
    CancelToken token;
    ASSERT_EQ(io::when_ready(w, sv[0], POLLIN, kNoDeadline, &token, cb, &out), 0);
    sleep_for(2ms);
    token.cancel();
    out.fired.acquire();
    EXPECT_EQ(out.result.load(), -ECANCELED);
    EXPECT_EQ(io::when_ready(w, sv[0], POLLIN, kNoDeadline, &token, cb, &out), -ECANCELED);
    ::close(sv[0]);
    ::close(sv[1]);
  });
}

TEST_P(IoTest, CancelFromOutsideThread) {
  Runtime rt(opts());
  CancelToken token;
  std::thread canceller;
  rt.run([&] {
    uint16_t port;
    int lfd = listen_loopback(&port);
    canceller = std::thread([&] {
      std::this_thread::sleep_for(10ms);
      token.cancel();
    });
    EXPECT_EQ(io::accept(lfd, nullptr, nullptr, kNoDeadline, &token), -ECANCELED);
    ::close(lfd);
  });
  canceller.join();
}

TEST_P(IoTest, CancelAtShutdownLeavesNoFdAndNoFiber) {
  int fds_before = count_fds();
  {
    Runtime rt(opts());
    rt.run([&] {
      uint16_t port;
      int lfd = listen_loopback(&port);
      CancelToken stop;
      WaitGroup conns;
      auto acceptor = spawn([&] { echo_server(lfd, stop, conns); });
      // Idle clients whose server fibers sit in recv.
      std::vector<int> clients;
      for (int i = 0; i < 50; ++i) clients.push_back(connect_to(port));
      while (conns.count() < 50) sleep_for(1ms);
      // Shutdown: stop accepting, then close the clients; the server fibers see EOF.
      stop.cancel();
      acceptor.join();
      for (int c : clients) io::close(c);
      conns.wait();
      ::close(lfd);
    });
    EXPECT_EQ(rt.leftover_fibers(), 0u);
  }
  EXPECT_EQ(count_fds(), fds_before);  // the runtime's own rings and eventfds are gone too
}

TEST_P(IoTest, SigpipeNeverKillsTheProcess) {
  Runtime rt(opts());
  rt.run([&] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    ::close(sv[1]);
    char buf[16] = {};
    EXPECT_EQ(io::send(sv[0], buf, sizeof buf), -EPIPE);
    // sendfile cannot take MSG_NOSIGNAL: the runtime blocks SIGPIPE on its threads.
    char path[] = "/tmp/weft-io-test-XXXXXX";
    int f = mkstemp(path);
    ASSERT_EQ(::write(f, "data", 4), 4);
    unlink(path);
    EXPECT_EQ(io::sendfile(sv[0], f, 0, 4), -EPIPE);
    ::close(f);
    ::close(sv[0]);
  });
  SUCCEED();  // still alive
}

TEST_P(IoTest, AcceptReturnsEmfileAtOnce) {
  rlimit saved;
  getrlimit(RLIMIT_NOFILE, &saved);
  Runtime rt(opts());
  rt.run([&] {
    uint16_t port;
    int lfd = listen_loopback(&port);
    int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = loopback(port);
    ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    rlimit low = saved;
    low.rlim_cur = static_cast<rlim_t>(count_fds() + 3);  // nearly full
    std::vector<int> filler;
    setrlimit(RLIMIT_NOFILE, &low);
    while (true) {
      int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      filler.push_back(fd);
    }
    rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    auto start = now();
    for (int i = 0; i < 5; ++i) EXPECT_EQ(io::accept(lfd, nullptr, nullptr), -EMFILE);
    EXPECT_LT(now() - start, 1s);
    getrusage(RUSAGE_SELF, &r1);
    for (int fd : filler) ::close(fd);
    setrlimit(RLIMIT_NOFILE, &saved);
    // With descriptors back, the same connection is accepted.
    int c = io::accept(lfd, nullptr, nullptr, now() + 5s);
    EXPECT_GE(c, 0);
    if (c >= 0) ::close(c);
    ::close(client);
    ::close(lfd);
  });
}

TEST_P(IoTest, FileOperations) {
  Runtime rt(opts());
  rt.run([&] {
    char dir[] = "/tmp/weft-io-dir-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    int dfd = ::open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    int fd = io::openat(dfd, "f.txt", O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(io::write(fd, "hello world", 11, 0), 11);
    struct ::statx st {};
    EXPECT_EQ(io::statx(dfd, "f.txt", 0, STATX_SIZE | STATX_MTIME, &st), 0);
    EXPECT_EQ(st.stx_size, 11u);
    char buf[16] = {};
    EXPECT_EQ(io::read(fd, buf, 5, 6), 5);
    EXPECT_EQ(std::string(buf, 5), "world");
    EXPECT_EQ(io::close(fd), 0);
    EXPECT_EQ(io::openat(dfd, "missing", O_RDONLY), -ENOENT);
    // RESOLVE_BENEATH refuses to climb out of the directory.
    EXPECT_EQ(io::openat2(dfd, "../etc/passwd", O_RDONLY, 0, RESOLVE_BENEATH), -EXDEV);
    ::unlinkat(dfd, "f.txt", 0);
    ::close(dfd);
    ::rmdir(dir);
  });
}

TEST_P(IoTest, ConnectRefusedAndPingPong) {
  Runtime rt(opts());
  rt.run([&] {
    uint16_t port;
    int lfd = listen_loopback(&port);
    ::close(lfd);  // nobody listens there now
    EXPECT_EQ(connect_to(port), -ECONNREFUSED);
    lfd = listen_loopback(&port);
    CancelToken stop;
    WaitGroup conns;
    auto acceptor = spawn([&] { echo_server(lfd, stop, conns); });
    int fd = connect_to(port);
    ASSERT_GE(fd, 0);
    for (int i = 0; i < 1000; ++i) {
      char b = static_cast<char>(i);
      ASSERT_EQ(io::send(fd, &b, 1), 1);
      char r = 0;
      ASSERT_EQ(io::recv(fd, &r, 1), 1);
      ASSERT_EQ(r, b);
    }
    io::close(fd);
    stop.cancel();
    acceptor.join();
    conns.wait();
    ::close(lfd);
  });
}

TEST_P(IoTest, SpliceFileToPipe) {
  Runtime rt(opts());
  rt.run([&] {
    char path[] = "/tmp/weft-io-splice-XXXXXX";
    int f = mkstemp(path);
    std::string data(100'000, 'z');
    ASSERT_EQ(::write(f, data.data(), data.size()), static_cast<ssize_t>(data.size()));
    unlink(path);
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    int64_t n = io::splice(f, 0, p[1], -1, 4096);
    EXPECT_EQ(n, 4096);
    char buf[4096];
    EXPECT_EQ(::read(p[0], buf, sizeof buf), 4096);
    ::close(p[0]);
    ::close(p[1]);
    ::close(f);
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, IoTest,
                         ::testing::Values(IoBackendKind::io_uring, IoBackendKind::epoll),
                         [](const auto& param_info) {
                           return param_info.param == IoBackendKind::io_uring ? "io_uring"
                                                                              : "epoll";
                         });

// Runs `fibers` splices from a regular file into pipes that are full, so that each splice
// blocks in one of io_uring's kernel workers until its pipe is drained; returns the largest
// thread count seen meanwhile.
int max_threads_during_blocked_splices(IoOptions io, int fibers) {
  io.backend = IoBackendKind::io_uring;
  RuntimeOptions o;
  o.processors = 2;
  o.make_driver = make_io_driver_factory(io);
  Runtime rt(o);
  std::atomic<int> max_threads{0};
  rt.run([&] {
    char path[] = "/tmp/weft-io-workers-XXXXXX";
    int f = mkstemp(path);
    std::string block(1 << 20, 'w');
    EXPECT_EQ(::write(f, block.data(), block.size()), static_cast<ssize_t>(block.size()));
    unlink(path);
    std::atomic<bool> release{false};
    std::atomic<int> errors{0};
    WaitGroup wg;
    wg.add(fibers);
    for (int i = 0; i < fibers; ++i) {
      spawn([&, i] {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0) {
          errors.fetch_add(1);
          wg.done();
          return;
        }
        int cap = ::fcntl(p[1], F_GETPIPE_SZ);
        std::string fill(static_cast<std::size_t>(cap), 'f');
        if (::write(p[1], fill.data(), fill.size()) != cap) errors.fetch_add(1);
        ::fcntl(p[0], F_SETFL, O_NONBLOCK);  // the write end stays blocking: splice waits
        auto drainer = spawn([&, p, cap] {
          while (!release.load()) sleep_for(1ms);
          char sink[4096];  // fiber stacks are 64 KiB
          int64_t want = cap + 4096, got = 0;
          while (got < want) {
            int64_t n = io::read(p[0], sink, sizeof sink, -1, now() + 10s);
            if (n <= 0) break;
            got += n;
          }
          if (got != want) errors.fetch_add(1);
        });
        if (io::splice(f, (i * 4096) % (1 << 20), p[1], -1, 4096) != 4096) errors.fetch_add(1);
        drainer.join();
        ::close(p[0]);
        ::close(p[1]);
        wg.done();
      });
    }
    // Let the splices pile up in the kernel, sampling the thread count.
    for (int i = 0; i < 300; ++i) {
      max_threads = std::max(max_threads.load(), count_threads());
      sleep_for(1ms);
    }
    release = true;
    wg.wait();
    ::close(f);
    EXPECT_EQ(errors.load(), 0);
  });
  return max_threads.load();
}

// io_uring hands splice to kernel worker threads; IOWQ_MAX_WORKERS must bound them.
TEST(IoUring, KernelWorkersStayBounded) {
  SKIP_WITHOUT_IO_URING();
  int base = count_threads();
  IoOptions io;
  io.iowq_bounded = 2;
  io.iowq_unbounded = 2;
  int bounded = max_threads_during_blocked_splices(io, scaled(2000));
  // 2 processors (one is this thread) x (bounded + unbounded), plus a little slack.
  int bound = base + 1 + 2 * (2 + 2) + 4;
  EXPECT_LE(bounded, bound);
  // The same load with a loose bound makes many more threads: the test can see them.
  io.iowq_bounded = 64;
  io.iowq_unbounded = 64;
  int loose = max_threads_during_blocked_splices(io, scaled(2000));
  EXPECT_GT(loose, bound) << "blocked splices did not reach kernel workers";
  std::printf("kernel workers: max threads %d with bound 2+2 (limit %d), %d with 64+64\n", bounded,
              bound, loose);
}

// A file of `blocks` blocks of kBlock bytes, block i filled with the byte i & 0xff, whose
// pages are then dropped from the page cache; returns its fd, or -1 where pages cannot be
// dropped (a tmpfs keeps them), so the caller skips.
constexpr std::size_t kBlock = 16 * 1024;

// Returns whether none of the first `size` bytes of file `f` is in the page cache, asked with
// mincore, which reads nothing (a one-byte preadv2 with RWF_NOWAIT answers too, but a miss
// starts the readahead of the pages it asked about).
bool none_resident(int f, std::size_t size) {
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, f, 0);
  if (map == MAP_FAILED) return false;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> pages((size + page - 1) / page);
  const bool ok = ::mincore(map, size, pages.data()) == 0;
  ::munmap(map, size);
  return ok && std::none_of(pages.begin(), pages.end(), [](unsigned char p) { return p & 1; });
}

int evicted_file(int blocks) {
  char path[] = "/var/tmp/weft-io-cold-XXXXXX";  // a disk: /tmp may be a tmpfs
  int f = mkstemp(path);
  if (f < 0) return -1;
  unlink(path);
  std::string block(kBlock, '\0');
  for (int i = 0; i < blocks; ++i) {
    block.assign(kBlock, static_cast<char>(i & 0xff));
    if (::write(f, block.data(), block.size()) != static_cast<ssize_t>(block.size())) break;
  }
  ::fdatasync(f);  // dirty pages are not dropped
  // A page still in another CPU's LRU batch is skipped by DONTNEED: ask again, a few times.
  for (int tries = 0; tries < 20; ++tries) {
    ::posix_fadvise(f, 0, 0, POSIX_FADV_DONTNEED);
    if (none_resident(f, static_cast<std::size_t>(blocks) * kBlock)) return f;
    std::this_thread::sleep_for(10ms);
  }
  ::close(f);  // still cached: cannot test here
  return -1;
}

// Reads of pages that are not cached go through io_uring, or the epoll backend's
// FileWorkers; either way the threads stay within processors x (bounded + unbounded), and
// every fiber gets its own bytes.
TEST_P(IoTest, ColdFileReadsStayBounded) {
  const int blocks = scaled(2000);
  int f = evicted_file(blocks);
  if (f < 0) GTEST_SKIP() << "pages cannot be dropped from the page cache under /var/tmp";
  int base = count_threads();
  IoOptions io;
  io.iowq_bounded = 2;
  io.iowq_unbounded = 2;
  std::atomic<int> max_threads{0}, wrong{0};
  Runtime rt(opts(2, io));
  rt.run([&] {
    WaitGroup wg;
    wg.add(blocks);
    for (int i = 0; i < blocks; ++i) {
      spawn([&, i] {
        auto buf = std::make_unique<char[]>(kBlock);  // fiber stacks are 64 KiB
        // A read may be short (epoll's RWF_NOWAIT try copies the cached part of a partly
        // cached range): read on until the block is whole, as a caller of read(2) must.
        int64_t n = 0;
        while (n < static_cast<int64_t>(kBlock)) {
          int64_t r = io::read(f, buf.get() + n, kBlock - static_cast<std::size_t>(n),
                               static_cast<int64_t>(i) * kBlock + n);
          if (r <= 0) break;
          n += r;
        }
        if (n != static_cast<int64_t>(kBlock) ||
            std::count(buf.get(), buf.get() + kBlock, static_cast<char>(i & 0xff)) != n) {
          wrong.fetch_add(1);
        }
        max_threads = std::max(max_threads.load(), count_threads());
        wg.done();
      });
    }
    wg.wait();
  });
  ::close(f);
  EXPECT_EQ(wrong.load(), 0);
  // 2 processors (one is this thread) x (bounded + unbounded), plus a little slack.
  EXPECT_LE(max_threads.load(), base + 1 + 2 * (2 + 2) + 4);
  if (GetParam() == IoBackendKind::epoll) {
    EXPECT_GT(max_threads.load(), base + 1) << "no read reached the file worker threads";
  }
  std::printf("cold reads: max threads %d, base %d\n", max_threads.load(), base);
}

}  // namespace
}  // namespace weft::rt

namespace weft::rt {
namespace {

// Processors woken through IORING_OP_MSG_RING instead of the eventfd lose no wake-up.
TEST(IoUring, MsgRingWakeUpsAreNotLost) {
  SKIP_WITHOUT_IO_URING();
  IoOptions io;
  io.backend = IoBackendKind::io_uring;
  io.wake = WakeMethod::msg_ring;
  RuntimeOptions o;
  o.processors = 2;
  o.make_driver = make_io_driver_factory(io);
  Runtime rt(o);
  std::atomic<int> rounds{0};
  rt.run([&] {
    Semaphore ping(0), pong(0);
    auto other = spawn([&] {
      for (int i = 0; i < 300; ++i) {
        ping.acquire();
        rounds.fetch_add(1);
        pong.release();
      }
    });
    for (int i = 0; i < 300; ++i) {
      if (i % 10 == 0) sleep_for(std::chrono::microseconds(200));  // let processors park
      ping.release();
      pong.acquire();
    }
    other.join();
  });
  EXPECT_EQ(rounds.load(), 300);
}

// Aborts the test process, saying why, unless disarmed within `limit`: for tests whose
// failure is a hang (a lost completion, a self-deadlock) that nothing else would bound.
class HangGuard {
 public:
  HangGuard(const char* what, std::chrono::seconds limit)
      : thread_([this, what, limit] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "hang guard: %s\n", what);
            std::abort();
          }
        }) {}
  ~HangGuard() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// A processor woken through MSG_RING while another reaps its completions: the waker's
// unpark must not enter its own ring from inside reap(). With a kernel that answers a
// submission over a completion backlog with -EBUSY (played here: the seam says -EBUSY to
// every second one), that enter reaped the same ring again, re-processing the completions
// the outer reap was walking and advancing its head past them: fibers woke with another
// operation's result, or never. A small ring (8 entries) keeps the backlog there; readers
// on several processors, woken thousands of times a round while the others park.
TEST(IoUring, WakeUpsDuringReapNeverReenterIt) {
  SKIP_WITHOUT_IO_URING();
  static std::atomic<uint64_t> submits{0};
  io_uring_submit_result = [](int rc) {
    return submits.fetch_add(1, std::memory_order_relaxed) % 2 == 0 ? -EBUSY : rc;
  };
  IoOptions io;
  io.backend = IoBackendKind::io_uring;
  io.wake = WakeMethod::msg_ring;
  io.ring_entries = 8;
  RuntimeOptions o;
  o.processors = 3;
  o.make_driver = make_io_driver_factory(io);
  Runtime rt(o);
  HangGuard guard("completions lost or processed twice (a reap re-entered)", 60s);
  constexpr int kReaders = 64;
  const int rounds = scaled(60);
  std::atomic<int> bad{0};
  std::atomic<int> received{0};
  rt.run([&] {
    std::vector<std::array<int, 2>> pairs(kReaders);
    for (auto& p : pairs) {
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, p.data()), 0);
    }
    std::vector<FiberHandle> readers;
    for (int i = 0; i < kReaders; ++i) {
      readers.push_back(spawn([&, fd = pairs[i][0]] {
        for (int r = 0; r < rounds; ++r) {
          char b = 0;
          int64_t n = io::recv(fd, &b, 1, 0, now() + 5s);
          if (n != 1 || b != static_cast<char>('a' + r % 26)) {
            bad.fetch_add(1);
            return;
          }
          received.fetch_add(1);
        }
      }));
    }
    // The writer: a thread outside the runtime, one byte to every reader a round, and a
    // pause after each round so that processors park and the next round's completions wake
    // them (a bounded wait: a lost completion shows as a reader that stops counting).
    std::thread writer([&] {
      for (int r = 0; r < rounds && bad.load() == 0; ++r) {
        char b = static_cast<char>('a' + r % 26);
        for (auto& p : pairs) ASSERT_EQ(::write(p[1], &b, 1), 1);
        auto limit = now() + 5s;
        while (received.load() < (r + 1) * kReaders && bad.load() == 0 && now() < limit) {
          std::this_thread::sleep_for(50us);
        }
        std::this_thread::sleep_for(300us);
      }
    });
    for (auto& h : readers) h.join();
    writer.join();
    for (auto& p : pairs) {
      ::close(p[0]);
      ::close(p[1]);
    }
  });
  io_uring_submit_result = nullptr;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(received.load(), rounds * kReaders);
}

// CancelToken::cancel wakes the drivers of the token's waits: one on another processor
// through MSG_RING from the canceller's ring. That unpark must neither reap the canceller's
// ring (where a readiness wait of the same token has completed) nor run while the token's
// lock is held: the reap ends that wait, which takes the token's lock, and the canceller
// deadlocked on itself (with a kernel answering -EBUSY, played by the seam).
TEST(IoUring, CancelWakingAnotherProcessorNeverDeadlocks) {
  SKIP_WITHOUT_IO_URING();
  io_uring_submit_result = [](int) { return -EBUSY; };
  IoOptions io;
  io.backend = IoBackendKind::io_uring;
  io.wake = WakeMethod::msg_ring;
  RuntimeOptions o;
  o.processors = 2;
  o.make_driver = make_io_driver_factory(io);
  Runtime rt(o);
  HangGuard guard("CancelToken::cancel deadlocked on its own lock", 30s);
  std::atomic<int> ready_result{-1000};
  std::atomic<int64_t> recv_result{-1000};
  rt.run([&] {
    int a[2], b[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, a), 0);
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, b), 0);
    CancelToken token;
    // A wait of the token on the other processor: this fiber and the other yield until
    // each sees the other elsewhere (the idle processor steals one of them meanwhile), and
    // then neither yields again, so each stays where it is.
    std::atomic<int> main_on{-1};
    std::atomic<int> other_on{-1};
    auto other = spawn([&] {
      for (auto limit = now() + 5s; now() < limit; yield()) {
        int me = static_cast<int>(Processor::current()->index());
        int m = main_on.load();
        if (m >= 0 && m != me) {
          other_on.store(me);
          break;
        }
      }
      char c;
      recv_result = io::recv(b[0], &c, 1, 0, kNoDeadline, &token);
    });
    bool apart = false;
    for (auto limit = now() + 5s; !apart && now() < limit;) {
      int me = static_cast<int>(Processor::current()->index());
      main_on.store(me);
      int seen = other_on.load();
      apart = seen >= 0 && seen != me;
      if (!apart) yield();
    }
    ASSERT_TRUE(apart) << "the two fibers never ran on different processors";
    // Busy, not asleep (a sleep might resume this fiber on the other processor): the
    // other fiber registers its recv with the token meanwhile.
    for (auto until = now() + 5ms; now() < until;) cpu_relax();
    // A readiness wait of the token here, already satisfied: its poll completes as it is
    // submitted, so its completion is in this ring when cancel() enters it.
    ASSERT_EQ(::write(a[1], "x", 1), 1);
    Semaphore fired{0};
    struct Ctx {
      std::atomic<int>* result;
      Semaphore* fired;
    } ctx{&ready_result, &fired};
    ReadyWait rw;
    ASSERT_EQ(io::when_ready(
                  rw, a[0], POLLIN, kNoDeadline, &token,
                  [](void* arg, int result) {
                    auto* c = static_cast<Ctx*>(arg);
                    c->result->store(result);
                    c->fired->release();
                  },
                  &ctx),
              0);
    token.cancel();
    fired.acquire();
    other.join();
    for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
  });
  io_uring_submit_result = nullptr;
  EXPECT_TRUE(ready_result.load() == -ECANCELED || ready_result.load() == POLLIN);
  EXPECT_EQ(recv_result.load(), -ECANCELED);
}

// Options of a one-processor runtime on the epoll backend.
RuntimeOptions epoll_options() {
  IoOptions io;
  io.backend = IoBackendKind::epoll;
  RuntimeOptions o;
  o.processors = 1;
  o.make_driver = make_io_driver_factory(io);
  return o;
}

// epoll: a cancel that ends a wait whose descriptor was closed meanwhile must not remove the
// registration of a new wait on the same number. One processor: wait A on a socketpair end
// (number N); that end is closed (its registration goes with the file); a new connection
// gets N back and a second wait, B, registers N; then A's token is cancelled. The cancel
// deleted N from epoll, so B saw its data only at its deadline.
TEST(Epoll, StaleCancelLeavesAReusedNumbersWaitAlone) {
  Runtime rt(epoll_options());
  std::atomic<int64_t> a_result{-1000};
  std::atomic<int64_t> b_result{-1000};
  rt.run([&] {
    uint16_t port;
    int lfd = listen_loopback(&port);
    int a[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, a), 0);
    CancelToken token;
    auto wait_a = spawn([&] {
      char c;
      a_result = io::recv(a[0], &c, 1, 0, kNoDeadline, &token);
    });
    yield();  // A is parked in its wait on a[0]
    int n = a[0];
    ::close(a[0]);
    int fd = connect_to(port);
    ASSERT_EQ(fd, n) << "the new connection did not get the closed number back";
    int srv = io::accept(lfd, nullptr, nullptr, now() + 5s);
    ASSERT_GE(srv, 0);
    auto wait_b = spawn([&] {
      char c;
      b_result = io::recv(fd, &c, 1, 0, now() + 2s);
    });
    yield();  // B is parked in its wait on the same number
    token.cancel();
    wait_a.join();
    ASSERT_EQ(::write(srv, "x", 1), 1);
    auto start = now();
    wait_b.join();
    EXPECT_EQ(b_result.load(), 1);
    EXPECT_LT(now() - start, 1s) << "B waited for its deadline";
    EXPECT_EQ(a_result.load(), -ECANCELED);
    for (int d : {fd, srv, a[1], lfd}) ::close(d);
  });
}

// Accepts one connection on `lfd` from a new client; returns {client, server side}.
std::pair<int, int> accepted_pair(int lfd, uint16_t port) {
  int client = connect_to(port, now() + 5s);
  int server = io::accept(lfd, nullptr, nullptr, now() + 5s);
  return {client, server};
}

// Returns the completions the calling processor's driver has handled (io_driver.hpp).
uint64_t completions_here() {
  return Processor::current()->io_driver()->stats().completions;
}

// A receive that took part of what came leaves the rest readable without another event:
// epoll's edge-triggered registration keeps the connection's ready bit until a try comes
// back short or empty, so recv_when_ready tries at once instead of waiting for an edge that
// will not come (it would wait out its deadline).
TEST_P(IoTest, ReadinessPersistsAfterAPartialDrain) {
  Runtime rt(opts(1));
  rt.run([&] {
    uint16_t port;
    int lfd = listen_loopback(&port);
    auto [client, srv] = accepted_pair(lfd, port);
    ASSERT_GE(srv, 0);
    char buf[4];
    std::atomic<int64_t> first{-1000};
    auto reader = spawn([&] { first = io::recv(srv, buf, sizeof buf, 0, now() + 5s); });
    yield();  // one processor: the reader runs first and waits, registering srv
    ASSERT_EQ(::write(client, "abcdefghij", 10), 10);
    reader.join();
    EXPECT_EQ(first.load(), 4);
    EXPECT_EQ(io::recv_when_ready(srv, buf, sizeof buf, 0, now() + 5s), 4);
    EXPECT_EQ(std::string(buf, 4), "efgh");
    EXPECT_EQ(io::recv_when_ready(srv, buf, sizeof buf, 0, now() + 5s), 2);
    EXPECT_EQ(std::string(buf, 2), "ij");
    // Drained (a short receive): the next receive waits for new bytes, and gets them.
    std::atomic<int64_t> next{-1000};
    auto waiter = spawn([&] { next = io::recv_when_ready(srv, buf, sizeof buf, 0, now() + 5s); });
    yield();
    ASSERT_EQ(::write(client, "k", 1), 1);
    waiter.join();
    EXPECT_EQ(next.load(), 1);
    io::close(srv);
    ::close(client);
    ::close(lfd);
  });
}

// Admission fairness: under a flood of new connections, an established connection whose
// bytes have arrived is served between two accepts, not after the whole listen queue. One
// processor; the acceptor never yields by itself. epoll's accept4 succeeds without waiting
// while the queue holds anyone, so before each accept waited for a poll of the processor's
// events the reader ran only after all kFlood accepts.
TEST_P(IoTest, AcceptUnderAFloodLetsAReadyConnectionRead) {
  constexpr int kFlood = 32;
  Runtime rt(opts(1));
  rt.run([&] {
    uint16_t port;
    int lfd = listen_loopback(&port);
    auto [client, srv] = accepted_pair(lfd, port);
    ASSERT_GE(srv, 0);
    std::atomic<int> accepted{0};
    std::atomic<int> accepted_at_read{-1};
    auto reader = spawn([&] {
      char c;
      EXPECT_EQ(io::recv(srv, &c, 1, 0, now() + 5s), 1);
      accepted_at_read = accepted.load();
    });
    yield();  // the reader waits on srv
    std::vector<int> flood;
    for (int i = 0; i < kFlood; ++i) {
      // Blocking connects: on loopback the handshake completes within the call.
      int f = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a = loopback(port);
      ASSERT_EQ(::connect(f, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
      flood.push_back(f);
    }
    ASSERT_EQ(::write(client, "x", 1), 1);
    std::vector<int> taken;
    for (int i = 0; i < kFlood; ++i) {
      int c = io::accept(lfd, nullptr, nullptr, now() + 5s);
      ASSERT_GE(c, 0);
      taken.push_back(c);
      accepted.fetch_add(1);
    }
    reader.join();
    EXPECT_GE(accepted_at_read.load(), 0);
    EXPECT_LT(accepted_at_read.load(), kFlood) << "the ready connection waited for the flood";
    for (int c : taken) io::close(c);
    for (int f : flood) ::close(f);
    io::close(srv);
    ::close(client);
    ::close(lfd);
  });
}

// epoll: an event of a closed connection must not complete a wait on the connection that
// got its number next. The old connection's file is kept open by a duplicate, so its
// edge-triggered registration (under its number) outlives the close and still fires; its
// event carries the old generation and must be dropped. One processor.
TEST(Epoll, StaleGenerationEventLeavesTheNumbersNextConnectionAlone) {
  Runtime rt(epoll_options());
  rt.run([&] {
    uint16_t port;
    int lfd = listen_loopback(&port);
    auto [client1, c1] = accepted_pair(lfd, port);
    ASSERT_GE(c1, 0);
    char b;
    EXPECT_EQ(io::recv(c1, &b, 1, 0, now() + 1ms), -ETIMEDOUT);  // registers c1 here
    const int keep = ::dup(c1);  // c1's file, and its registration, stay
    const int n = c1;
    const int client2 = connect_to(port, now() + 5s);  // before the close: not on n
    io::close(c1);
    const int c2 = io::accept(lfd, nullptr, nullptr, now() + 5s);
    ASSERT_EQ(c2, n) << "the new connection did not get the closed number back";
    std::atomic<int64_t> got{-1000};
    auto next_owner = spawn([&] {
      char c;
      got = io::recv(c2, &c, 1, 0, now() + 5s);
    });
    yield();  // the next owner waits on n (registered again, under the new generation)
    const uint64_t before = completions_here();
    ASSERT_EQ(::write(client1, "old", 3), 3);  // fires the old registration of n
    // The poll that reaps keep's event reaps the old registration's too (both were ready
    // before it ran): exactly one completion, keep's own.
    EXPECT_TRUE(io::poll(keep, POLLIN, now() + 5s) & POLLIN);
    EXPECT_EQ(completions_here() - before, 1u) << "the old event completed the new wait";
    EXPECT_EQ(got.load(), -1000);
    ASSERT_EQ(::write(client2, "y", 1), 1);
    next_owner.join();
    EXPECT_EQ(got.load(), 1);
    io::close(c2);
    for (int d : {keep, client1, client2, lfd}) ::close(d);
  });
}

// epoll, across processors: processor A registers connection c1; B closes it and accepts
// a new connection that gets c1's number; A's next wait on that number must register it
// again (A's entry belongs to the closed connection, whose registration the kernel dropped)
// instead of waiting on nothing until its deadline. Two one-processor runtimes on two
// threads stand for two processors: the generations are process-wide, as the drivers of one
// runtime see them.
TEST(Epoll, ANumbersNextConnectionIsRegisteredAgainOnEveryProcessor) {
  const RuntimeOptions o = epoll_options();
  uint16_t port;
  const int lfd = listen_loopback(&port);
  std::atomic<int> step{0};
  std::atomic<int> c1{-1}, c2{-1}, client2{-1};
  std::atomic<int64_t> got{-1000};
  // Waits (bounded) until the other runtime has reached step s.
  auto reach = [&](int s) {
    for (int i = 0; i < 100'000 && step.load() < s; ++i) sleep_for(100us);
    return step.load() >= s;
  };
  std::thread b_thread([&] {
    Runtime b(o);
    b.run([&] {
      if (!reach(1)) return;
      client2 = connect_to(port, now() + 5s);  // before the close: not on c1's number
      io::close(c1.load());
      c2 = io::accept(lfd, nullptr, nullptr, now() + 5s);
      step = 2;
      if (!reach(3)) return;
      ASSERT_EQ(::write(client2.load(), "y", 1), 1);
    });
  });
  Runtime a(o);
  a.run([&] {
    const int client1 = connect_to(port, now() + 5s);
    c1 = io::accept(lfd, nullptr, nullptr, now() + 5s);
    ASSERT_GE(c1.load(), 0);
    char b;
    EXPECT_EQ(io::recv(c1.load(), &b, 1, 0, now() + 1ms), -ETIMEDOUT);  // registers c1 on A
    const int n = c1.load();
    step = 1;
    ASSERT_TRUE(reach(2));
    ASSERT_EQ(c2.load(), n) << "the new connection did not get the closed number back";
    auto reader = spawn([&] {
      char c;
      got = io::recv(c2.load(), &c, 1, 0, now() + 5s);
    });
    yield();  // the reader waits on n
    step = 3;
    reader.join();
    EXPECT_EQ(got.load(), 1) << "A waited on the closed connection's registration";
    io::close(c2.load());
    ::close(client1);
  });
  step = 3;  // lets B finish if A stopped early
  b_thread.join();
  if (client2.load() >= 0) ::close(client2.load());
  ::close(lfd);
}

// try_read copies what the page cache holds at once, and never waits for the disk: the
// HTTP/2 body path's first try before the driver's read. For a page that is not cached the
// kernel starts its readahead and answers EAGAIN, or, when that read completed at once (a
// fast virtual disk does, 1 in a few runs here), copies it: either answer is right, and the
// bytes, when any, are the file's.
TEST(IoTryRead, CopiesCachedPagesAndNeverWaitsForOthers) {
  const int f = evicted_file(4);
  if (f < 0) GTEST_SKIP() << "pages cannot be dropped from the page cache under /var/tmp";
  std::string buf(kBlock, 'x');
  const int64_t cold = io::try_read(f, buf.data(), buf.size(), kBlock);  // block 1: not cached
  if (cold != -EAGAIN) {
    ASSERT_GT(cold, 0) << "neither EAGAIN nor the cached bytes";
    EXPECT_EQ(buf.substr(0, static_cast<std::size_t>(cold)),
              std::string(static_cast<std::size_t>(cold), '\1'));
  }
  ASSERT_EQ(::pread(f, buf.data(), buf.size(), 0), static_cast<ssize_t>(kBlock));  // cached now
  buf.assign(kBlock, 'x');
  EXPECT_EQ(io::try_read(f, buf.data(), buf.size(), 0), static_cast<int64_t>(kBlock));
  EXPECT_EQ(buf, std::string(kBlock, '\0'));  // block 0 is filled with byte 0
  EXPECT_EQ(io::try_read(f, buf.data(), buf.size(), 4 * kBlock), 0);  // the end of the file
  ::close(f);
  EXPECT_EQ(io::try_read(f, buf.data(), 1, 0), -EBADF);
}

}  // namespace
}  // namespace weft::rt
