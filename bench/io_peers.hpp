// The network stacks io_bench compares, each as an echo server and a ping-pong client:
//
// - weft on its io_uring backend and on its epoll backend: a one-processor runtime, one
//   fiber per connection doing io::recv / io::send_all.
// - Boost.Asio 1.74 (header-only): one thread running one io_context (concurrency hint 1),
//   async_read_some / async_write chained per connection; epoll underneath.
// - plain threads: blocking recv / send, one thread per connection (64 KiB stacks).
//
// And the echo load (always weft on io_uring, so every server faces the same client).
// Every socket has TCP_NODELAY. Every server echoes what one recv returned (up to 1 KiB)
// with one send of all of it. Call each function in its own process (io_bench forks one
// per side); they set their figures and return when their connections are done.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/io_driver.hpp"

#include "bench/child.hpp"
#include "bench/io_window.hpp"

namespace weft::bench {

enum class Stack { weft_uring, weft_epoll, asio, threads };

/// Returns the stack's name for tables ("weft io_uring", "Boost.Asio"...).
const char* stack_name(Stack s);

/// Makes a non-blocking listening socket on 127.0.0.1 (an ephemeral port); returns the fd
/// and sets *port, or -1.
int make_listener(uint16_t* port);

/// weft's default RuntimeOptions::spin (idle rounds before a processor sleeps in the kernel).
inline constexpr unsigned kDefaultSpin = 100;

struct ServeOptions {
  unsigned conns = 1;                   // accept this many, then serve until all have closed
  unsigned spin = kDefaultSpin;         // weft stacks: RuntimeOptions::spin
  const WindowPipes* window = nullptr;  // answer the load client's window marks
  SyscallCounter counter = SyscallCounter::none;
};

/// Echo server on `listen_fd` (which it closes). With a window: sets the WindowSampler's
/// figures (srv_cpu_s, enters, ...).
void serve_echo(Stack s, int listen_fd, const ServeOptions& o, Figures& out);

/// Ping-pong client: `warmup` then `round_trips` round trips of msg_size bytes to
/// 127.0.0.1:port, one at a time (weft stacks with RuntimeOptions::spin = `spin`). Sets
/// rtt_mean_us, rtt_p50_us, rtt_p99_us.
void ping_pong(Stack s, uint16_t port, std::size_t msg_size, unsigned warmup, unsigned round_trips,
               unsigned spin, Figures& out);

struct LoadOptions {
  unsigned conns = 1000;
  std::size_t msg_size = 64;
  double warmup_s = 0.5;  // load before the window
  double window_s = 2;    // the measured window
};

/// Echo load on weft's io_uring backend (one processor): o.conns connections, each sending
/// msg_size bytes and waiting for all of them to come back, in a loop. Marks the window on
/// `window`. Sets msgs (echoes completed in the window), window_s, msgs_per_s.
void echo_load(uint16_t port, const LoadOptions& o, const WindowPipes& window, Figures& out);

/// The cost of an idle spin: a one-processor weft runtime (`s` is weft_uring or weft_epoll)
/// whose only fiber sleeps `periods` times for 500 us; sets cpu_us_per_idle, the process's
/// CPU time per sleep (spin before parking, the park, the timer's wake-up).
void idle_spin(Stack s, unsigned spin, unsigned periods, Figures& out);

/// Wake-up latency between processors: a two-processor runtime (processors pinned to the
/// first two allowed CPUs) on io_uring with `wake`. A target fiber parks; once its
/// processor's thread is asleep in the kernel, a fiber on the other processor wakes it and
/// stays busy until it has run (so the sleeping processor must take it). Sets wake_p50_us,
/// wake_p99_us, waker_ns (the wake call, median), waker_enters_per_wake and
/// target_enters_per_wake (io_uring_enter calls of each processor, per wake-up), stalls
/// (samples dropped: nobody but the waker's processor ran the target, after a second) and
/// not_asleep (samples whose target thread was not seen asleep within 100 ms).
void wake_latency(rt::WakeMethod wake, unsigned samples, unsigned gap_us, Figures& out);

}  // namespace weft::bench
