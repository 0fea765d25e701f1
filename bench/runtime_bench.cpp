// runtime_bench: weft's runtime against Boost.Fiber, both measured in the same run.
//
// Every benchmark (runtime_cases.hpp) runs for each variant (weft with some option, Boost
// with some scheduler) in a fresh child process (child.hpp), so peak RSS and page faults are
// per run; variants alternate within each repetition (order reversed every other one) so slow
// drift on a shared machine hits both alike. Tables show the median over repetitions, the
// spread of the first figure, the weft/Boost ratio of the first figure against the Boost
// variant marked as reference, and median peak RSS, minor faults and CPU time.
//
// One-processor runs pin the child to one CPU (the last one this process may use); the
// others use every allowed CPU. Run the whole program under `taskset` to choose the CPUs.
//
//   runtime_bench [--quick] [--reps N] [--only GROUP,...] [--skynet-size N] [--list]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/child.hpp"
#include "bench/peers.hpp"
#include "bench/report.hpp"
#include "bench/runtime_cases.hpp"

namespace weft::bench {
namespace {

using std::chrono::milliseconds;

struct Metric {
  std::string key;    // the name the benchmark sets in Figures
  std::string label;  // column title, with its unit
};

struct Variant {
  std::string label;
  bool reference = false;  // the Boost run the others' ratio is taken against
  unsigned procs = 1;      // one processor: pin the child to one CPU
  std::function<void(Figures&)> run;
};

struct Case {
  std::string group;
  std::string config;
  std::vector<Metric> metrics;
  std::vector<Variant> variants;
  unsigned timeout_s = 120;
};

struct Options {
  bool quick = false;
  unsigned reps = 3;
  std::vector<std::string> only;
  uint64_t skynet_size = 1'000'000;
  bool list = false;
  long help_age_us = -1;  // -1: the runtime's default
};

long g_help_age_us = -1;  // --help-age, for rc()

struct Sizes {
  uint64_t yield_switches;   // context switches per yield run
  uint64_t spawn_total;      // fibers per spawn+join run
  uint64_t cycle_handoffs;   // hand-offs per cycle run
  uint64_t lock_total;       // acquisitions per lock run
  uint64_t transfers;        // epochs per transfer run
  milliseconds duration;     // churn and locality run this long
  milliseconds stall;        // a transfer epoch this long ends the run
  milliseconds idle;         // idle runs sleep this long
  unsigned wake_samples;     // outside-waker wake-ups per run
  unsigned wake_spacing_us;  // mean gap between wake-ups
  unsigned busy_samples;     // busy-fiber-waker wake-ups per run
};

Sizes sizes_for(const Options& o) {
  if (o.quick) {
    return {.yield_switches = 20'000,
            .spawn_total = 2'000,
            .cycle_handoffs = 20'000,
            .lock_total = 4'000,
            .transfers = 200,
            .duration = milliseconds(30),
            .stall = milliseconds(100),
            .idle = milliseconds(100),
            .wake_samples = 30,
            .wake_spacing_us = 300,
            .busy_samples = 20};
  }
  return {.yield_switches = 4'000'000,
          .spawn_total = 200'000,
          .cycle_handoffs = 2'000'000,
          .lock_total = 400'000,
          .transfers = 20'000,
          .duration = milliseconds(1000),
          .stall = milliseconds(1000),
          .idle = milliseconds(5000),
          .wake_samples = 2000,
          .wake_spacing_us = 1000,
          .busy_samples = 500};
}

RunConfig rc(unsigned procs, unsigned spin = 100, bool suspend = false) {
  RunConfig c;
  c.procs = procs;
  c.spin = spin;
  c.boost_suspend = suspend;
  if (g_help_age_us >= 0) c.help_age = std::chrono::microseconds(g_help_age_us);
  return c;
}

std::string boost_label(unsigned procs, bool suspend) {
  if (procs <= 1) return "Boost round_robin";
  return suspend ? "Boost work_stealing suspend" : "Boost work_stealing";
}

// Appends the weft variant and the Boost reference variant of one benchmark body.
template <typename F>
void add_pair(Case& c, unsigned procs, F body) {
  c.variants.push_back(
      {"weft", false, procs, [=](Figures& f) { body.template operator()<WeftPeer>(f); }});
  c.variants.push_back({boost_label(procs, false), true, procs,
                        [=](Figures& f) { body.template operator()<BoostPeer>(f); }});
}

std::vector<Case> make_cases(const Options& o) {
  Sizes s = sizes_for(o);
  std::vector<Case> cases;

  // yield
  for (unsigned procs : {1u, 2u}) {
    for (unsigned per : {2u, 100u}) {
      unsigned fibers = per * procs;
      Case c{"yield",
             std::to_string(procs) + "P, " + std::to_string(fibers) + " fibers",
             {{"ns_per_switch", "ns/switch"}, {"Mswitch_per_s", "M switches/s"}},
             {}};
      uint64_t yields = s.yield_switches / fibers;
      auto cfg = rc(procs);
      add_pair(c, procs, [=]<typename P>(Figures& f) { yield_bench<P>(cfg, fibers, yields, f); });
      cases.push_back(std::move(c));
    }
  }

  // spawn+join
  for (unsigned procs : {1u, 2u}) {
    for (unsigned batch : {1u, 1000u}) {
      Case c{"spawn_join",
             std::to_string(procs) + "P, " + (batch == 1 ? "one at a time" : "batches of 1000"),
             {{"ns_per_fiber", "ns/fiber"}},
             {}};
      uint64_t total = std::max<uint64_t>(s.spawn_total, batch);
      auto cfg = rc(procs);
      add_pair(c, procs,
               [=]<typename P>(Figures& f) { spawn_join_bench<P>(cfg, total, batch, f); });
      cases.push_back(std::move(c));
    }
  }

  // skynet
  uint64_t sky = o.quick ? 10'000 : o.skynet_size;
  for (bool warm : {false, true}) {
    for (unsigned procs : {1u, 2u}) {
      for (Launch launch : {Launch::post, Launch::dispatch}) {
        Case c{"skynet",
               std::to_string(procs) + "P, " + (launch == Launch::post ? "post" : "dispatch") +
                   (warm ? ", second run" : ""),
               {{"ms", "ms"}, {"sum_ok", "sum ok"}},
               {},
               600};
        auto cfg = rc(procs);
        add_pair(c, procs,
                 [=]<typename P>(Figures& f) { skynet_bench<P>(cfg, sky, launch, warm, f); });
        cases.push_back(std::move(c));
      }
    }
  }

  // cycle
  for (unsigned procs : {1u, 2u}) {
    for (unsigned rings : {procs, 16u}) {
      Case c{"cycle",
             std::to_string(procs) + "P, " + std::to_string(rings) + " ring(s) of 5",
             {{"Mhandoff_per_s", "M hand-offs/s"}, {"ns_per_handoff", "ns/hand-off"}},
             {}};
      uint64_t iters = s.cycle_handoffs / (rings * 5);
      auto cfg = rc(procs);
      add_pair(c, procs, [=]<typename P>(Figures& f) { cycle_bench<P>(cfg, rings, 5, iters, f); });
      cases.push_back(std::move(c));
    }
  }

  // churn
  for (unsigned procs : {1u, 2u}) {
    Case c{"churn",
           std::to_string(procs) + "P, 32 fibers, 8 semaphores",
           {{"Mops_per_s", "M ops/s"}},
           {}};
    auto cfg = rc(procs);
    auto d = s.duration;
    add_pair(c, procs, [=]<typename P>(Figures& f) { churn_bench<P>(cfg, 32, 8, d, f); });
    cases.push_back(std::move(c));
  }

  // locality
  for (unsigned procs : {1u, 2u}) {
    for (bool share : {false, true}) {
      unsigned fibers = 16 * procs;
      Case c{"locality",
             std::to_string(procs) + "P, " + std::to_string(fibers) + " fibers, " +
                 (share ? "share" : "noshare"),
             {{"Mops_per_s", "M ops/s"}, {"migrations_pct", "data migrations %"}},
             {}};
      auto cfg = rc(procs);
      auto d = s.duration;
      add_pair(c, procs, [=]<typename P>(Figures& f) {
        locality_bench<P>(cfg, fibers, share, 4096, 128, d, f);
      });
      cases.push_back(std::move(c));
    }
  }

  // transfer: the thesis' version (the leader spins; needs two processors), and one whose
  // leader yields while it waits
  struct TransferCfg {
    unsigned procs;
    bool leader_yields;
    bool park;
  };
  for (TransferCfg tc :
       {TransferCfg{2, false, true}, TransferCfg{2, false, false}, TransferCfg{1, true, true},
        TransferCfg{1, true, false}, TransferCfg{2, true, true}, TransferCfg{2, true, false}}) {
    Case c{"transfer",
           std::to_string(tc.procs) + "P, 16 fibers, " + (tc.park ? "park" : "yield") +
               (tc.leader_yields ? ", leader yields" : ", leader spins"),
           {{"max_delay_us", "max delay us"},
            {"p99_delay_us", "p99 delay us"},
            {"mean_delay_us", "mean delay us"},
            {"transfers_per_s", "transfers/s"},
            {"stalls", "stalled"}},
           {}};
    auto cfg = rc(tc.procs);
    uint64_t n = s.transfers;
    auto stall = s.stall;
    add_pair(c, tc.procs, [=]<typename P>(Figures& f) {
      transfer_bench<P>(cfg, 16, n, tc.park, tc.leader_yields, stall, f);
    });
    cases.push_back(std::move(c));
  }

  // lock
  struct LockCfg {
    unsigned procs;
    bool cs_yield;
  };
  for (LockCfg lc : {LockCfg{1, true}, LockCfg{2, true}, LockCfg{2, false}}) {
    for (unsigned fibers : {8u, 32u}) {
      Case c{"lock",
             std::to_string(lc.procs) + "P, " + std::to_string(fibers) + " fibers, " +
                 (lc.cs_yield ? "yield in CS" : "short CS"),
             {{"Macq_per_s", "M acq/s"}, {"cv", "CV of per-fiber acq"}},
             {}};
      auto cfg = rc(lc.procs);
      uint64_t total = s.lock_total;
      bool y = lc.cs_yield;
      auto weft = [&](const char* label, rt::Duration handoff) {
        c.variants.push_back({label, false, lc.procs, [=](Figures& f) {
                                lock_bench<WeftPeer, rt::Mutex>(cfg, fibers, total, y, f, handoff);
                              }});
      };
      weft("weft barging", rt::Duration::max());
      weft("weft default (1 ms)", std::chrono::milliseconds(1));
      weft("weft strict hand-off", rt::Duration::zero());
      c.variants.push_back({"Boost mutex", true, lc.procs, [=](Figures& f) {
                              lock_bench<BoostPeer, BoostPeer::Mutex>(cfg, fibers, total, y, f);
                            }});
      cases.push_back(std::move(c));
    }
  }

  // wake latency: an outside thread wakes a fiber; the spin trade-off
  std::vector<int> cpus = allowed_cpus();
  int waker_cpu = cpus.size() > 1 ? cpus.front() : -1;  // 1P runs are pinned to cpus.back()
  for (unsigned procs : {1u, 2u}) {
    Case c{"wake",
           std::to_string(procs) + "P, outside waker, " + std::to_string(s.wake_spacing_us) +
               " us apart",
           {{"p50_us", "p50 us"}, {"p99_us", "p99 us"}, {"max_us", "max us"}, {"cpu_pct", "CPU %"}},
           {}};
    unsigned n = s.wake_samples, gap = s.wake_spacing_us;
    int wcpu = procs == 1 ? waker_cpu : -1;
    for (unsigned spin : {0u, 100u, 1000u, 10000u}) {
      auto cfg = rc(procs, spin);
      c.variants.push_back({"weft spin=" + std::to_string(spin), false, procs,
                            [=](Figures& f) { wake_bench<WeftPeer>(cfg, n, gap, 0, wcpu, f); }});
    }
    for (bool suspend : procs == 1 ? std::vector<bool>{false} : std::vector<bool>{true, false}) {
      auto cfg = rc(procs, 100, suspend);
      c.variants.push_back({boost_label(procs, suspend), suspend || procs == 1, procs,
                            [=](Figures& f) { wake_bench<BoostPeer>(cfg, n, gap, 0, wcpu, f); }});
    }
    cases.push_back(std::move(c));
  }
  {
    Case c{"wake",
           "2P, fiber waker busy 200 us after posting",
           {{"p50_us", "p50 us"}, {"p99_us", "p99 us"}, {"max_us", "max us"}, {"cpu_pct", "CPU %"}},
           {}};
    unsigned n = s.busy_samples, gap = s.wake_spacing_us;
    c.variants.push_back(
        {"weft", false, 2, [=](Figures& f) { wake_bench<WeftPeer>(rc(2), n, gap, 200, -1, f); }});
    for (bool suspend : {true, false}) {
      c.variants.push_back({boost_label(2, suspend), suspend, 2, [=](Figures& f) {
                              wake_bench<BoostPeer>(rc(2, 100, suspend), n, gap, 200, -1, f);
                            }});
    }
    cases.push_back(std::move(c));
  }

  // idle
  for (unsigned procs : {1u, 2u}) {
    Case c{"idle",
           std::to_string(procs) + "P, " + std::to_string(s.idle.count()) + " ms asleep",
           {{"cpu_pct", "CPU % of one core"}},
           {}};
    auto d = s.idle;
    c.variants.push_back(
        {"weft", false, procs, [=](Figures& f) { idle_bench<WeftPeer>(rc(procs), d, f); }});
    for (bool suspend : procs == 1 ? std::vector<bool>{false} : std::vector<bool>{true, false}) {
      c.variants.push_back(
          {boost_label(procs, suspend), suspend || procs == 1, procs,
           [=](Figures& f) { idle_bench<BoostPeer>(rc(procs, 100, suspend), d, f); }});
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// ---------------------------------------------------------------------------------------
// Running and reporting

struct Outcome {
  std::vector<ChildResult> runs;  // successful ones
  std::string error;              // the last failure, if any
};

std::string fmt_kib(double kib) {
  char buf[64];
  if (std::isnan(kib)) return "-";
  if (kib >= 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", kib / 1024 / 1024);
  } else if (kib >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", kib / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f KiB", kib);
  }
  return buf;
}

void print_case_rows(const Case& c, const std::vector<Outcome>& outcomes) {
  auto fig = [&](const Outcome& o, const std::string& key) {
    std::vector<double> v;
    for (const auto& r : o.runs) {
      if (auto x = r.figures.get(key)) v.push_back(*x);
    }
    return v;
  };
  double ref = NAN;
  for (std::size_t i = 0; i < c.variants.size(); ++i) {
    if (c.variants[i].reference) ref = median(fig(outcomes[i], c.metrics[0].key));
  }
  for (std::size_t i = 0; i < c.variants.size(); ++i) {
    const Outcome& o = outcomes[i];
    std::printf("| %s | %s |", c.config.c_str(), c.variants[i].label.c_str());
    if (o.runs.empty()) {
      for (std::size_t m = 0; m < c.metrics.size(); ++m) std::printf(" - |");
      std::printf(" FAILED: %s | | | |\n", o.error.c_str());
      continue;
    }
    for (std::size_t m = 0; m < c.metrics.size(); ++m) {
      std::vector<double> v = fig(o, c.metrics[m].key);
      double med = median(v);
      std::printf(" %s", fmt(med).c_str());
      if (m == 0 && v.size() > 1 && med != 0) {
        auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        std::printf(" ±%.0f%%", 50.0 * (*hi - *lo) / std::fabs(med));
      }
      std::printf(" |");
    }
    double med0 = median(fig(o, c.metrics[0].key));
    if (c.variants[i].reference || std::isnan(ref) || ref == 0) {
      std::printf(" |");
    } else {
      std::printf(" %.3f |", med0 / ref);
    }
    std::vector<double> rss, flt;
    for (const auto& r : o.runs) {
      rss.push_back(r.peak_rss_kib);
      flt.push_back(r.minflt);
    }
    std::vector<double> cpu, sys;
    for (const auto& r : o.runs) {
      cpu.push_back(r.cpu_s);
      sys.push_back(r.sys_s);
    }
    std::printf(" %s | %s | %s / %s |", fmt_kib(median(rss)).c_str(), fmt(median(flt)).c_str(),
                fmt(median(cpu)).c_str(), fmt(median(sys)).c_str());
    if (!o.error.empty()) std::printf(" (a run failed: %s)", o.error.c_str());
    std::printf("\n");
  }
}

void usage() {
  std::puts(
      "usage: runtime_bench [--quick] [--reps N] [--only GROUP,...] [--skynet-size N] [--list]\n"
      "  --quick          tiny sizes, one repetition (a smoke test; the figures mean little)\n"
      "  --reps N         repetitions of every variant (default 3)\n"
      "  --only LIST      run only these groups: yield, spawn_join, skynet, cycle, churn,\n"
      "                   locality, transfer, lock, wake, idle\n"
      "  --skynet-size N  leaves of the skynet tree (a power of 10; default 1000000)\n"
      "  --help-age US    weft's RuntimeOptions::help_age in microseconds; 0 turns helping\n"
      "                   off (the scheduler as it was before helping), for A/B runs\n"
      "  --list           print the cases and exit");
}

bool parse(int argc, char** argv, Options& o) {
  bool reps_set = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--reps") {
      const char* v = next();
      if (!v || std::atoi(v) < 1) return false;
      o.reps = static_cast<unsigned>(std::atoi(v));
      reps_set = true;
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
    } else if (a == "--skynet-size") {
      const char* v = next();
      if (!v) return false;
      o.skynet_size = std::strtoull(v, nullptr, 10);
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--help-age") {
      const char* v = next();
      if (!v || std::atol(v) < 0) return false;
      o.help_age_us = std::atol(v);
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
  g_help_age_us = opts.help_age_us;
  std::vector<Case> cases = make_cases(opts);
  if (!opts.only.empty()) {
    std::erase_if(cases, [&](const Case& c) {
      return std::find(opts.only.begin(), opts.only.end(), c.group) == opts.only.end();
    });
  }
  if (opts.list) {
    for (const auto& c : cases) {
      std::printf("%-10s %s:", c.group.c_str(), c.config.c_str());
      for (const auto& v : c.variants) std::printf(" [%s]", v.label.c_str());
      std::printf("\n");
    }
    return 0;
  }
  std::vector<int> cpus = allowed_cpus();
  int pin_cpu = cpus.empty() ? -1 : cpus.back();
  std::printf("# runtime_bench: weft vs Boost.Fiber, %u repetition(s)%s, CPUs allowed:", opts.reps,
              opts.quick ? ", quick sizes" : "");
  for (int c : cpus) std::printf(" %d", c);
  std::printf("; one-processor runs pinned to CPU %d\n", pin_cpu);

  int failures = 0;
  std::string group;
  for (const auto& c : cases) {
    if (c.group != group) {
      group = c.group;
      std::printf("\n## %s\n\n| config | runtime |", group.c_str());
      for (const auto& m : c.metrics) std::printf(" %s |", m.label.c_str());
      std::printf(" weft/Boost | peak RSS | minor faults | CPU s / sys s |\n|---|---|");
      for (std::size_t m = 0; m < c.metrics.size(); ++m) std::printf("---|");
      std::printf("---|---|---|---|\n");
    }
    std::vector<Outcome> outcomes(c.variants.size());
    for (unsigned rep = 0; rep < opts.reps; ++rep) {
      for (std::size_t k = 0; k < c.variants.size(); ++k) {
        std::size_t i = rep % 2 ? c.variants.size() - 1 - k : k;
        const Variant& v = c.variants[i];
        ChildOptions co;
        co.cpu = v.procs == 1 ? pin_cpu : -1;
        co.timeout_s = c.timeout_s;
        ChildResult r = run_in_child(co, v.run);
        if (r.ok) {
          outcomes[i].runs.push_back(std::move(r));
        } else {
          outcomes[i].error = r.error;
          ++failures;
        }
      }
    }
    print_case_rows(c, outcomes);
    std::fflush(stdout);
  }
  if (failures) std::fprintf(stderr, "runtime_bench: %d run(s) failed\n", failures);
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  return weft::bench::run_main(argc, argv);
}
