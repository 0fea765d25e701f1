// io_bench: weft's I/O runtime against its epoll backend, Boost.Asio and plain threads, in
// the same run (docs/benchmarks.md, "Runtime I/O").
//
// Groups:
// - pingpong: one loopback TCP connection, N round trips of 1 or 64 bytes; server and
//   client are both the stack under test, each in its own process, pinned to different CPUs.
// - echo: a server (each stack) on the first CPU echoes 64-byte messages on 1000
//   connections; the load client (always weft on io_uring) on the second CPU keeps every
//   connection busy for a fixed window. Messages/s, server CPU per message, and for weft the
//   driver's io_uring_enter (or epoll_wait) calls per operation.
// - syscalls: the echo run again with `perf stat` counting the server's system calls over
//   the same window (and, with --strace, one run under `strace -c`), to confirm the driver's
//   counter. Counting slows system calls, so these runs are kept apart from echo's.
// - spin: what an idle spin costs per backend (RuntimeOptions::spin counts rounds, and a
//   round of the epoll backend is a system call), which explains much of pingpong.
// - wake: wake-up latency between processors, IoOptions.wake = eventfd against msg_ring.
//
// Every measurement runs in fresh child processes (child.hpp); within a repetition the
// variants alternate (order reversed every other repetition). Tables give the median over
// repetitions, the spread of the first figure (±, half the range over the median) and
// ratios against the reference row of the case.
//
//   io_bench [--quick] [--reps N] [--only GROUP,...] [--conns N] [--window-ms N] [--strace]
//            [--list]
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/child.hpp"
#include "bench/io_peers.hpp"
#include "bench/io_window.hpp"
#include "bench/report.hpp"

namespace weft::bench {
namespace {

struct Metric {
  std::string key;     // the figure's name
  std::string label;   // column title, with its unit
  bool ratio = false;  // add a column: this row's median / the reference row's
};

struct RunResult {
  bool ok = false;
  std::string error;
  Figures figures;
};

struct Variant {
  std::string label;
  bool reference = false;
  std::function<RunResult()> run;
};

struct Case {
  std::string group;
  std::string config;
  std::vector<Metric> metrics;
  std::vector<Variant> variants;
};

struct Options {
  bool quick = false;
  unsigned reps = 3;
  std::vector<std::string> only;
  unsigned conns = 1000;
  unsigned window_ms = 2000;
  bool strace = false;
  bool list = false;
};

struct Sizes {
  unsigned rtt_warmup, rtt_round_trips;
  LoadOptions load;
  unsigned wake_samples, wake_gap_us;
  unsigned idle_periods;
  unsigned timeout_s;
};

Sizes sizes_for(const Options& o) {
  if (o.quick) {
    return {20, 200, {.conns = 20, .msg_size = 64, .warmup_s = 0.05, .window_s = 0.1}, 20, 300,
            20, 60};
  }
  return {2000,
          20000,
          {.conns = o.conns, .msg_size = 64, .warmup_s = 0.5, .window_s = o.window_ms / 1000.0},
          2000,
          300,
          2000,
          120};
}

struct Cpus {
  int server = -1, client = -1;
};

Cpus pick_cpus() {
  std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) return {};
  return {cpus.front(), cpus.size() > 1 ? cpus[1] : cpus.front()};
}

// Runs a server child and a client child at once (pinned per `cpus`), joined by a listening
// socket (made here) and, with `window`, the window handshake pipes. Returns both sides'
// figures, plus srv_total_cpu_s and cli_total_cpu_s (each child's whole run).
RunResult run_pair(Cpus cpus, unsigned timeout_s, bool window,
                   const std::function<void(int lfd, const WindowPipes*, Figures&)>& server,
                   const std::function<void(uint16_t port, const WindowPipes*, Figures&)>& client) {
  RunResult r;
  uint16_t port = 0;
  int lfd = make_listener(&port);
  if (lfd < 0) {
    r.error = "listen failed";
    return r;
  }
  WindowPipes pipes;
  if (window && !pipes.open()) {
    ::close(lfd);
    r.error = "pipe failed";
    return r;
  }
  const WindowPipes* wp = window ? &pipes : nullptr;
  ChildProcess srv = start_child({.cpu = cpus.server, .timeout_s = timeout_s}, [&](Figures& f) {
    pipes.keep_server_ends();
    server(lfd, wp, f);
  });
  ChildProcess cli = start_child({.cpu = cpus.client, .timeout_s = timeout_s}, [&](Figures& f) {
    ::close(lfd);
    pipes.keep_client_ends();
    client(port, wp, f);
  });
  ::close(lfd);
  pipes.close_all();
  ChildResult c = wait_child(cli);
  if (!c.ok) kill_child(srv);
  ChildResult s = wait_child(srv);
  if (!c.ok || !s.ok) {
    r.error = !c.ok ? "client: " + c.error : "server: " + s.error;
    return r;
  }
  r.ok = true;
  for (const auto& [k, v] : s.figures.all()) r.figures.set(k, v);
  for (const auto& [k, v] : c.figures.all()) r.figures.set(k, v);
  r.figures.set("srv_total_cpu_s", s.cpu_s);
  r.figures.set("cli_total_cpu_s", c.cpu_s);
  return r;
}

// Derived echo figures: per message and per operation.
void derive_echo(Figures& f) {
  double msgs = f.get("msgs").value_or(0);
  auto per = [&](const char* name, const char* num, const char* den) {
    auto n = f.get(num), d = f.get(den);
    if (n && d && *d > 0) f.set(name, *n / *d);
  };
  if (msgs > 0) {
    if (auto cpu = f.get("srv_cpu_s")) f.set("cpu_us_per_msg", *cpu / msgs * 1e6);
    if (auto sc = f.get("perf_syscalls")) f.set("syscalls_per_msg", *sc / msgs);
  }
  if (auto w = f.get("window_s"); w && *w > 0) {
    if (auto cpu = f.get("srv_cpu_s")) f.set("srv_cpu_pct", *cpu / *w * 100);
    if (auto sys = f.get("srv_sys_s")) f.set("srv_sys_pct", *sys / *w * 100);
    if (auto cpu = f.get("cli_cpu_s")) f.set("cli_cpu_pct", *cpu / *w * 100);
  }
  per("enters_per_op", "enters", "operations");
  per("perf_enters_per_op", "perf_uring_enters", "operations");
  per("perf_waits_per_op", "perf_epoll_waits", "operations");
  per("strace_enters_per_op", "strace_uring_enters", "operations");
  per("perf_vs_driver", "perf_uring_enters", "enters");
  per("strace_vs_driver", "strace_uring_enters", "enters");
}

Variant echo_variant(Stack s, bool reference, const Sizes& z, Cpus cpus, SyscallCounter counter,
                     const std::string& suffix = "") {
  return {std::string(stack_name(s)) + suffix, reference, [=] {
            RunResult r = run_pair(
                cpus, z.timeout_s, true,
                [=](int lfd, const WindowPipes* w, Figures& f) {
                  serve_echo(s, lfd, {.conns = z.load.conns, .window = w, .counter = counter}, f);
                },
                [=](uint16_t port, const WindowPipes* w, Figures& f) {
                  echo_load(port, z.load, *w, f);
                });
            if (r.ok) derive_echo(r.figures);
            return r;
          }};
}

std::vector<Case> make_cases(const Options& o) {
  Sizes z = sizes_for(o);
  Cpus cpus = pick_cpus();
  std::vector<Case> cases;
  const Stack stacks[] = {Stack::weft_uring, Stack::weft_epoll, Stack::asio, Stack::threads};

  // Ping-pong: weft as configured by default; with spin 1000 (io_uring: about as long a spin
  // as epoll's 100 rounds, each of which is an epoll_pwait2); and with spin 0 (a processor
  // sleeps in the kernel as soon as it has nothing to run, as a blocking thread does).
  struct PingPeer {
    Stack stack;
    unsigned spin;
  };
  const PingPeer ping_peers[] = {{Stack::weft_uring, kDefaultSpin},
                                 {Stack::weft_epoll, kDefaultSpin},
                                 {Stack::weft_uring, 1000},
                                 {Stack::weft_uring, 0},
                                 {Stack::weft_epoll, 0},
                                 {Stack::asio, 0},
                                 {Stack::threads, 0}};
  for (std::size_t size : {std::size_t{1}, std::size_t{64}}) {
    Case c{"pingpong",
           std::to_string(size) + " B, " + std::to_string(z.rtt_round_trips) + " round trips",
           {{"rtt_mean_us", "us/round trip", true},
            {"rtt_p50_us", "p50 us", true},
            {"rtt_p99_us", "p99 us"},
            {"cpu_us_per_rt", "CPU us/round trip (both)", true}},
           {}};
    for (PingPeer p : ping_peers) {
      bool weft = p.stack == Stack::weft_uring || p.stack == Stack::weft_epoll;
      std::string label = stack_name(p.stack);
      if (weft && p.spin != kDefaultSpin) label += ", spin " + std::to_string(p.spin);
      bool ref = p.stack == Stack::weft_uring && p.spin == kDefaultSpin;
      c.variants.push_back(
          {label, ref, [=] {
             RunResult r = run_pair(
                 cpus, z.timeout_s, false,
                 [=](int lfd, const WindowPipes*, Figures& f) {
                   serve_echo(p.stack, lfd, {.conns = 1, .spin = p.spin}, f);
                 },
                 [=](uint16_t port, const WindowPipes*, Figures& f) {
                   ping_pong(p.stack, port, size, z.rtt_warmup, z.rtt_round_trips, p.spin, f);
                 });
             if (r.ok) {
               double cpu = r.figures.get("srv_total_cpu_s").value_or(0) +
                            r.figures.get("cli_total_cpu_s").value_or(0);
               r.figures.set("cpu_us_per_rt", cpu / (z.rtt_warmup + z.rtt_round_trips) * 1e6);
             }
             return r;
           }});
    }
    cases.push_back(std::move(c));
  }

  std::string load = std::to_string(z.load.conns) + " conns, " + std::to_string(z.load.msg_size) +
                     " B, weft io_uring client";
  {
    Case c{"echo",
           load,
           {{"msgs_per_s", "msgs/s", true},
            {"cpu_us_per_msg", "server CPU us/msg", true},
            {"srv_cpu_pct", "server CPU %"},
            {"srv_sys_pct", "of which sys %"},
            {"cli_cpu_pct", "client CPU %"},
            {"enters_per_op", "enters/op (driver)"}},
           {}};
    for (Stack s : stacks) {
      c.variants.push_back(echo_variant(s, s == Stack::weft_uring, z, cpus, SyscallCounter::none));
    }
    cases.push_back(std::move(c));
  }
  {
    Case c{"syscalls",
           load + ", perf attached",
           {{"syscalls_per_msg", "syscalls/msg", true},
            {"perf_enters_per_op", "io_uring_enter/op (perf)"},
            {"enters_per_op", "enters/op (driver)"},
            {"perf_vs_driver", "perf/driver enters"},
            {"perf_waits_per_op", "epoll_pwait2/op (perf)"},
            {"msgs_per_s", "msgs/s"}},
           {}};
    for (Stack s : stacks) {
      c.variants.push_back(echo_variant(s, s == Stack::weft_uring, z, cpus, SyscallCounter::perf));
    }
    cases.push_back(std::move(c));
    if (o.strace) {
      Case t{"syscalls",
             load + ", strace -c attached",
             {{"strace_enters_per_op", "io_uring_enter/op (strace)"},
              {"enters_per_op", "enters/op (driver)"},
              {"strace_vs_driver", "strace/driver enters"},
              {"msgs_per_s", "msgs/s"}},
             {}};
      t.variants.push_back(
          echo_variant(Stack::weft_uring, true, z, cpus, SyscallCounter::strace, ", strace"));
      cases.push_back(std::move(t));
    }
  }
  {
    Case c{"spin",
           "1P, " + std::to_string(z.idle_periods) + " sleeps of 500 us",
           {{"cpu_us_per_idle", "CPU us per sleep", true}},
           {}};
    for (Stack st : {Stack::weft_uring, Stack::weft_epoll}) {
      for (unsigned spin : {0u, kDefaultSpin, 1000u}) {
        std::string label = std::string(stack_name(st)) + ", spin " + std::to_string(spin);
        unsigned n = z.idle_periods, t = z.timeout_s;
        c.variants.push_back({label, st == Stack::weft_uring && spin == kDefaultSpin, [=] {
                                ChildResult cr =
                                    run_in_child({.cpu = cpus.client, .timeout_s = t},
                                                 [=](Figures& f) { idle_spin(st, spin, n, f); });
                                return RunResult{cr.ok, cr.error, cr.figures};
                              }});
      }
    }
    cases.push_back(std::move(c));
  }
  {
    Case c{"wake",
           "2P io_uring, waker busy, target's processor asleep, " + std::to_string(z.wake_samples) +
               " wake-ups",
           {{"wake_p50_us", "p50 us", true},
            {"wake_p99_us", "p99 us", true},
            {"waker_ns", "waker ns/wake", true},
            {"waker_enters_per_wake", "waker enters/wake"},
            {"target_enters_per_wake", "target enters/wake"},
            {"stalls", "stalls > 1 s"},
            {"not_asleep", "target awake"}},
           {}};
    for (rt::WakeMethod m : {rt::WakeMethod::eventfd, rt::WakeMethod::msg_ring}) {
      unsigned n = z.wake_samples, gap = z.wake_gap_us, t = z.timeout_s;
      c.variants.push_back({m == rt::WakeMethod::eventfd ? "eventfd" : "msg_ring",
                            m == rt::WakeMethod::eventfd, [=] {
                              ChildResult cr =
                                  run_in_child({.cpu = -1, .timeout_s = t},
                                               [=](Figures& f) { wake_latency(m, n, gap, f); });
                              return RunResult{cr.ok, cr.error, cr.figures};
                            }});
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// ---------------------------------------------------------------------------------------
// Running and reporting

struct Outcome {
  std::vector<std::optional<Figures>> by_rep;  // one slot per repetition; empty: it failed
  std::string error;                           // the last failure, if any

  bool any() const {
    return std::any_of(by_rep.begin(), by_rep.end(), [](const auto& f) { return f.has_value(); });
  }
};

std::vector<double> values(const Outcome& o, const std::string& key) {
  std::vector<double> v;
  for (const auto& f : o.by_rep) {
    if (!f) continue;
    if (auto x = f->get(key)) v.push_back(*x);
  }
  return v;
}

// Counts the repetitions in which both ran, and those in which `o` was below `ref`.
std::pair<int, int> paired_lower(const Outcome& o, const Outcome& ref, const std::string& key) {
  int both = 0, lower = 0;
  for (std::size_t r = 0; r < o.by_rep.size() && r < ref.by_rep.size(); ++r) {
    if (!o.by_rep[r] || !ref.by_rep[r]) continue;
    auto a = o.by_rep[r]->get(key), b = ref.by_rep[r]->get(key);
    if (!a || !b) continue;
    ++both;
    if (*a < *b) ++lower;
  }
  return {both, lower};
}

void print_header(const Case& c, const std::string& ref_label) {
  std::printf("\n## %s\n\n| config | stack |", c.group.c_str());
  std::size_t cols = 2;
  for (const auto& m : c.metrics) {
    std::printf(" %s |", m.label.c_str());
    ++cols;
  }
  for (const auto& m : c.metrics) {
    if (!m.ratio) continue;
    std::printf(" %s ÷ %s |", m.label.c_str(), ref_label.c_str());
    ++cols;
  }
  std::printf("\n|");
  for (std::size_t i = 0; i < cols; ++i) std::printf("---|");
  std::printf("\n");
}

void print_rows(const Case& c, const std::vector<Outcome>& outcomes) {
  std::vector<double> ref(c.metrics.size(), NAN);
  const Outcome* ref_outcome = nullptr;
  for (std::size_t i = 0; i < c.variants.size(); ++i) {
    if (!c.variants[i].reference) continue;
    ref_outcome = &outcomes[i];
    for (std::size_t m = 0; m < c.metrics.size(); ++m) {
      ref[m] = median(values(outcomes[i], c.metrics[m].key));
    }
  }
  for (std::size_t i = 0; i < c.variants.size(); ++i) {
    const Outcome& o = outcomes[i];
    std::printf("| %s | %s |", c.config.c_str(), c.variants[i].label.c_str());
    if (!o.any()) {
      std::printf(" FAILED: %s |\n", o.error.c_str());
      continue;
    }
    for (std::size_t m = 0; m < c.metrics.size(); ++m) {
      std::vector<double> v = values(o, c.metrics[m].key);
      double med = median(v);
      std::printf(" %s", fmt(med).c_str());
      if (m == 0 && v.size() > 1 && med != 0) {
        auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        std::printf(" ±%.0f%%", 50.0 * (*hi - *lo) / std::fabs(med));
      }
      std::printf(" |");
    }
    bool first_ratio = true;
    for (std::size_t m = 0; m < c.metrics.size(); ++m) {
      if (!c.metrics[m].ratio) continue;
      double med = median(values(o, c.metrics[m].key));
      if (c.variants[i].reference || std::isnan(ref[m]) || ref[m] == 0 || std::isnan(med)) {
        std::printf(" |");
      } else {
        std::printf(" %.3f", med / ref[m]);
        // Paired by repetition, for the first ratio: how often this row was below the
        // reference measured next to it.
        auto [both, lower] = paired_lower(o, *ref_outcome, c.metrics[m].key);
        if (first_ratio && both > 1) std::printf(" (%d/%d lower)", lower, both);
        std::printf(" |");
      }
      first_ratio = false;
    }
    if (!o.error.empty()) std::printf(" (a run failed: %s)", o.error.c_str());
    std::printf("\n");
  }
}

void usage() {
  std::puts(
      "usage: io_bench [--quick] [--reps N] [--only GROUP,...] [--conns N] [--window-ms N]\n"
      "                [--strace] [--list]\n"
      "  --quick         tiny sizes, one repetition (a smoke test; the figures mean little)\n"
      "  --reps N        repetitions of every variant (default 3)\n"
      "  --only LIST     run only these groups: pingpong, echo, syscalls, spin, wake\n"
      "  --conns N       echo connections (default 1000)\n"
      "  --window-ms N   echo measurement window (default 2000)\n"
      "  --strace        add an echo run with strace -c attached to the io_uring server\n"
      "  --list          print the cases and exit");
}

bool parse(int argc, char** argv, Options& o) {
  bool reps_set = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto number = [&](unsigned& out) {
      const char* v = next();
      if (!v || std::atoi(v) < 1) return false;
      out = static_cast<unsigned>(std::atoi(v));
      return true;
    };
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--reps") {
      if (!number(o.reps)) return false;
      reps_set = true;
    } else if (a == "--conns") {
      if (!number(o.conns)) return false;
    } else if (a == "--window-ms") {
      if (!number(o.window_ms)) return false;
    } else if (a == "--only") {
      const char* v = next();
      if (!v) return false;
      std::string list = v;
      for (std::size_t p = 0; p <= list.size();) {
        std::size_t q = list.find(',', p);
        if (q == std::string::npos) q = list.size();
        if (q > p) o.only.push_back(list.substr(p, q - p));
        p = q + 1;
      }
    } else if (a == "--strace") {
      o.strace = true;
    } else if (a == "--list") {
      o.list = true;
    } else {
      return false;
    }
  }
  if (o.quick && !reps_set) o.reps = 1;
  return true;
}

int run_main(int argc, char** argv) {
  Options opts;
  if (!parse(argc, argv, opts)) {
    usage();
    return 2;
  }
  // A counting tool that exits early must not kill the server through a write to its pipe.
  std::signal(SIGPIPE, SIG_IGN);
  // 1000 connections need more descriptors than a default soft limit of 1024 on each side.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  spdlog::set_level(spdlog::level::warn);  // the backend choice is logged at info
  std::vector<Case> cases = make_cases(opts);
  if (!opts.only.empty()) {
    std::erase_if(cases, [&](const Case& c) {
      return std::find(opts.only.begin(), opts.only.end(), c.group) == opts.only.end();
    });
  }
  if (opts.list) {
    for (const auto& c : cases) {
      std::printf("%-9s %s:", c.group.c_str(), c.config.c_str());
      for (const auto& v : c.variants) std::printf(" [%s]", v.label.c_str());
      std::printf("\n");
    }
    return 0;
  }
  Cpus cpus = pick_cpus();
  std::printf("# io_bench: %u repetition(s)%s; servers on CPU %d, clients on CPU %d\n", opts.reps,
              opts.quick ? ", quick sizes" : "", cpus.server, cpus.client);

  int failures = 0;
  std::string columns;  // a new table whenever the group or its columns change
  for (const auto& c : cases) {
    std::string ref_label;
    for (const auto& v : c.variants) {
      if (v.reference) ref_label = v.label;
    }
    std::string cols = c.group;
    for (const auto& m : c.metrics) cols += "|" + m.label;
    if (cols != columns) {
      columns = cols;
      print_header(c, ref_label);
    }
    std::vector<Outcome> outcomes(c.variants.size());
    for (auto& o : outcomes) o.by_rep.resize(opts.reps);
    for (unsigned rep = 0; rep < opts.reps; ++rep) {
      for (std::size_t k = 0; k < c.variants.size(); ++k) {
        std::size_t i = rep % 2 ? c.variants.size() - 1 - k : k;
        RunResult r = c.variants[i].run();
        if (r.ok) {
          outcomes[i].by_rep[rep] = std::move(r.figures);
        } else {
          outcomes[i].error = r.error;
          ++failures;
        }
      }
    }
    print_rows(c, outcomes);
    std::fflush(stdout);
  }
  if (failures) std::fprintf(stderr, "io_bench: %d run(s) failed\n", failures);
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  return weft::bench::run_main(argc, argv);
}
