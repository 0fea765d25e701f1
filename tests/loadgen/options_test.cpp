// Tests loadgen/options.cpp: httperf's options and meanings, weft-load's, combinations, exit
// codes, the httperf-style command line and the plan.
#include "loadgen/options.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft::load {
namespace {

OptionsParse parse(std::vector<const char*> args) {
  args.insert(args.begin(), "weft-load");
  return parse_options(static_cast<int>(args.size()), args.data());
}

Options ok(std::vector<const char*> args) {
  auto r = parse(std::move(args));
  EXPECT_TRUE(r.options) << r.output;
  return r.options.value_or(Options{});
}

// Returns the error output, checking the usage-error exit code.
std::string usage_error(std::vector<const char*> args) {
  auto r = parse(std::move(args));
  EXPECT_FALSE(r.options);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  return r.output;
}

TEST(Options, DefaultsAreHttperfs) {
  const Options o = ok({});
  EXPECT_EQ(o.server, "localhost");
  EXPECT_EQ(o.port, 80);
  EXPECT_EQ(o.workload.kind, WorkloadSpec::Kind::kUri);
  EXPECT_EQ(o.workload.uri, "/");
  EXPECT_EQ(o.workload.method, "GET");
  EXPECT_EQ(o.workload.num_calls, 1u);
  EXPECT_EQ(o.workload.seed, 1u);
  EXPECT_EQ(o.period.spacing, Spacing::kSequential);
  EXPECT_EQ(o.max_sessions(), 1u);
  EXPECT_FALSE(o.timeout_s);
  EXPECT_EQ(o.threads, 1u);
  EXPECT_EQ(o.max_conns, 0u);
  EXPECT_FALSE(o.quiet);
  EXPECT_FALSE(o.dry_run);
}

TEST(Options, HttperfOptionsBothSpellings) {
  const Options o =
      ok({"--server", "10.0.0.2", "--port=8080", "--uri=/a?b=1", "--rate", "150",
          "--num-conns=1000", "--num-calls", "10", "--timeout=2.5", "--hog", "--method", "HEAD"});
  EXPECT_EQ(o.server, "10.0.0.2");
  EXPECT_EQ(o.port, 8080);
  EXPECT_EQ(o.workload.uri, "/a?b=1");
  EXPECT_EQ(o.workload.method, "HEAD");
  EXPECT_EQ(o.period, Period::from_rate(150));
  EXPECT_EQ(o.num_conns, 1000u);
  EXPECT_EQ(o.max_sessions(), 1000u);
  EXPECT_EQ(o.workload.num_calls, 10u);
  EXPECT_EQ(o.timeout_s, 2.5);
  EXPECT_TRUE(o.hog);
}

TEST(Options, PeriodSyntax) {
  EXPECT_EQ(ok({"--period", "e0.01", "--num-conns", "5"}).period,
            (Period{Spacing::kExponential, 0.01, 0.0}));
  EXPECT_EQ(ok({"--period=u1,3"}).period, (Period{Spacing::kUniform, 1.0, 3.0}));
  EXPECT_EQ(ok({"--period=0.5"}).period, (Period{Spacing::kFixed, 0.5, 0.0}));
  EXPECT_NE(usage_error({"--period", "u1"}).find("uniform spacing needs both bounds"),
            std::string::npos);
  EXPECT_NE(usage_error({"--period", "x"}).find("--period x"), std::string::npos);
}

TEST(Options, WorkloadsAndTheirFiles) {
  const Options z = ok({"--zipf", "1.1", "--files", "set.txt", "--seed", "9", "--num-calls=4"});
  EXPECT_EQ(z.workload.kind, WorkloadSpec::Kind::kZipf);
  EXPECT_EQ(z.workload.zipf_s, 1.1);
  EXPECT_EQ(z.workload.files, "set.txt");
  EXPECT_EQ(z.workload.seed, 9u);
  EXPECT_EQ(z.workload.num_calls, 4u);

  const Options w = ok({"--wlog", "y,uris.log"});
  EXPECT_EQ(w.workload.kind, WorkloadSpec::Kind::kWlog);
  EXPECT_TRUE(w.workload.wlog_loop);
  EXPECT_EQ(w.workload.wlog_file, "uris.log");
  EXPECT_FALSE(ok({"--wlog=n,a,b.log"}).workload.wlog_loop);
  EXPECT_EQ(ok({"--wlog=n,a,b.log"}).workload.wlog_file, "a,b.log");

  auto r = parse({"--wsesslog", "100,0.5,path/with,comma.log", "--num-conns", "7"});
  ASSERT_TRUE(r.options) << r.output;
  EXPECT_EQ(r.options->workload.kind, WorkloadSpec::Kind::kSessionLog);
  EXPECT_EQ(r.options->workload.sesslog_sessions, 100u);
  EXPECT_EQ(r.options->workload.sesslog_think_s, 0.5);
  EXPECT_EQ(r.options->workload.sesslog_file, "path/with,comma.log");
  EXPECT_EQ(r.options->max_sessions(), 100u);  // N, not --num-conns
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("--num-conns is ignored"), std::string::npos);
}

TEST(Options, NumCallsRangeDrawsPerSession) {
  EXPECT_EQ(ok({"--num-calls", "1..5"}).workload.num_calls, (CallCount{1, 5}));
  EXPECT_EQ(ok({"--num-calls=3..3", "--zipf", "1", "--files", "m"}).workload.num_calls,
            CallCount{3});
  EXPECT_EQ(httperf_command_line(ok({"--num-calls", "2..7", "--rate", "5", "--num-conns", "9"})),
            "httperf --client=0/1 --server=localhost --port=80 --uri=/ --rate=5 --num-conns=9 "
            "--num-calls=2..7 --seed=1");
  EXPECT_NE(describe_plan(ok({"--num-calls", "1..4"})).find("1..4 call(s) per session"),
            std::string::npos);
  struct Case {
    const char* arg;
    const char* want;
  };
  for (const Case& c : {Case{"0..3", "at least 1"}, Case{"4..2", "need 1 <= MIN <= MAX"},
                        Case{"1..", "expected N or MIN..MAX"}, Case{"..3", "expected N"},
                        Case{"1-3", "expected N"}, Case{"1..99999999999", "<= 4294967295"}}) {
    const std::string out = usage_error({"--num-calls", c.arg});
    EXPECT_NE(out.find(c.want), std::string::npos) << c.arg << " -> " << out;
  }
  EXPECT_NE(usage_error({"--num-calls", "1..3", "--wlog", "y,f"}).find("--uri and --zipf"),
            std::string::npos);
  EXPECT_NE(usage_error({"--num-calls", "1..3", "--wsesslog", "1,0,f"}).find("--uri and --zipf"),
            std::string::npos);
}

TEST(Options, DurationWarmupAndSessionLimits) {
  const Options d = ok({"--rate", "100", "--duration", "30", "--warmup", "5"});
  EXPECT_EQ(d.duration_s, 30.0);
  EXPECT_EQ(d.warmup_s, 5.0);
  EXPECT_FALSE(d.max_sessions());  // until the duration ends
  EXPECT_EQ(ok({"--rate", "100", "--duration", "30", "--num-conns", "10"}).max_sessions(), 10u);
  EXPECT_NE(usage_error({"--duration", "10", "--warmup", "10"}).find("shorter than --duration"),
            std::string::npos);
}

TEST(Options, WeftLoadOwnOptions) {
  const Options o =
      ok({"--rate", "10", "--threads", "4", "--max-conns", "500", "--json", "r.json", "--csv",
          "r.csv", "--quiet", "--dry-run", "--seed", "18446744073709551615"});
  EXPECT_EQ(o.threads, 4u);
  EXPECT_EQ(o.max_conns, 500u);
  EXPECT_EQ(o.json_file, "r.json");
  EXPECT_EQ(o.csv_file, "r.csv");
  EXPECT_TRUE(o.quiet);
  EXPECT_TRUE(o.dry_run);
  EXPECT_EQ(o.workload.seed, 18446744073709551615ull);
  EXPECT_EQ(o.backend, Backend::automatic);
  EXPECT_EQ(ok({"--backend", "epoll"}).backend, Backend::epoll);
  EXPECT_EQ(ok({"--backend", "io_uring"}).backend, Backend::io_uring);
  EXPECT_EQ(ok({"--backend", "auto"}).backend, Backend::automatic);
}

TEST(Options, SweepExpandsRates) {
  const Options o = ok({"--sweep", "100:500:100", "--duration", "10"});
  EXPECT_EQ(o.sweep_rates, (std::vector<double>{100, 200, 300, 400, 500}));
  std::string error;
  const auto tenths = parse_sweep("0.1:0.5:0.1", error);
  ASSERT_TRUE(tenths);
  ASSERT_EQ(tenths->size(), 5u);
  EXPECT_DOUBLE_EQ(tenths->back(), 0.5);
  EXPECT_EQ(parse_sweep("5:5:1", error)->size(), 1u);
  for (const char* bad : {"1:2", "0:10:1", "10:1:1", "1:10:0", "a:b:c", "1:100000:1"}) {
    EXPECT_FALSE(parse_sweep(bad, error)) << bad;
  }
}

TEST(Options, BadCombinationsAreUsageErrors) {
  struct Case {
    std::vector<const char*> args;
    const char* want;
  };
  const Case cases[] = {
      {{"--rate", "10", "--period", "d0.1"}, "give --rate or --period, not both"},
      {{"--uri", "/x", "--wlog", "y,f"}, "choose one workload"},
      {{"--zipf", "1", "--files", "m", "--wsesslog", "1,0,f"}, "choose one workload"},
      {{"--zipf", "1"}, "--zipf needs --files"},
      {{"--files", "m"}, "--files needs --zipf"},
      {{"--zipf", "-1", "--files", "m"}, "--zipf -1"},
      {{"--sweep", "1:2:1", "--rate", "5", "--duration", "1"}, "--sweep sets the rate"},
      {{"--sweep", "1:2:1"}, "--sweep needs --duration or --num-conns"},
      {{"--threads", "4"}, "sequential sessions"},
      {{"--threads", "0", "--rate", "1"}, "--threads 0"},
      {{"--backend", "kqueue"}, "--backend kqueue: expected auto, io_uring or epoll"},
      {{"--num-conns", "0"}, "--num-conns must be at least 1"},
      {{"--num-conns", "-5"}, "--num-conns -5: not a whole number"},
      {{"--max-conns", "-1"}, "--max-conns -1"},
      {{"--seed", "x"}, "--seed x"},
      {{"--num-calls", "0"}, "--num-calls must be at least 1"},
      {{"--duration", "0"}, "--duration 0"},
      {{"--duration", "nan"}, "--duration nan"},
      {{"--timeout", "0"}, "--timeout 0"},
      {{"--rate", "-1"}, "--rate -1"},
      {{"--rate", "inf"}, "--rate inf"},
      {{"--warmup", "-1"}, "--warmup -1"},
      {{"--wlog", "x,f"}, "--wlog x,f: expected B,FILE"},
      {{"--wlog", "y,"}, "--wlog y,: expected B,FILE"},
      {{"--wsesslog", "0,1,f"}, "N must be a count >= 1"},
      {{"--wsesslog", "5,-1,f"}, "X must be seconds >= 0"},
      {{"--wsesslog", "5,1"}, "expected N,X,FILE"},
      {{"--uri", "/a b"}, "--uri '/a b'"},
      {{"--method", "GE T"}, "not an HTTP method token"},
      {{"--add-header", "NoColon"}, "expected NAME: VALUE"},
      {{"--add-header", "Bad Name: x"}, "expected NAME: VALUE"},
      {{"--add-header", "X: a\r\nY: b"}, "control characters"},
      {{"--add-header", "host: other"}, "writes or forbids this field itself"},
      {{"--add-header", "Connection: close"}, "writes or forbids this field itself"},
      {{"--server", ""}, "empty host name"},
      {{"--port", "0"}, "--port must be between 1 and 65535"},
  };
  for (const Case& c : cases) {
    const std::string out = usage_error(c.args);
    EXPECT_NE(out.find(c.want), std::string::npos) << c.args[0] << " -> " << out;
  }
}

TEST(Options, AddedHeadersKeptInOrderWithTheirValuesTrimmed) {
  const Options o = ok({"--add-header", "Accept-Encoding:  gzip, br\t", "--add-header", "X-A:"});
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[0].name, "Accept-Encoding");
  EXPECT_EQ(o.headers[0].value, "gzip, br");
  EXPECT_EQ(o.headers[1].name, "X-A");
  EXPECT_EQ(o.headers[1].value, "");
  EXPECT_EQ(httperf_command_line(o),
            "httperf --client=0/1 --server=localhost --port=80 --uri=/ "
            "--add-header='Accept-Encoding: gzip, br\\n' --add-header='X-A: \\n' "
            "--num-calls=1 --seed=1");
}

TEST(Options, Cli11ErrorsExitTwoAndHelpExitsZero) {
  EXPECT_NE(usage_error({"--frobnicate"}).find("frobnicate"), std::string::npos);
  usage_error({"--port", "70000"});
  usage_error({"--num-calls", "-2"});
  usage_error({"--rate", "fast"});
  auto help = parse({"--help"});
  EXPECT_FALSE(help.options);
  EXPECT_EQ(help.exit_code, 0);
  for (const char* opt :
       {"--server", "--period", "--wsesslog", "--zipf", "--sweep", "--max-conns", "fd-unavail"}) {
    EXPECT_NE(help.output.find(opt), std::string::npos) << opt;
  }
  auto version = parse({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.output.find("weft-load "), std::string::npos);
}

TEST(Options, HttperfCommandLine) {
  EXPECT_EQ(httperf_command_line(ok({"--server", "127.0.0.1", "--port", "8099", "--rate", "50",
                                     "--num-conns", "50", "--num-calls", "2"})),
            "httperf --client=0/1 --server=127.0.0.1 --port=8099 --uri=/ --rate=50 "
            "--num-conns=50 --num-calls=2 --seed=1");
  EXPECT_EQ(httperf_command_line(
                ok({"--zipf", "1", "--files", "set.txt", "--period", "e0.01", "--duration", "60",
                    "--warmup", "5", "--threads", "2", "--timeout", "5", "--method", "HEAD"})),
            "httperf --client=0/1 --server=localhost --port=80 --method=HEAD --period=e0.01 "
            "--timeout=5 --num-calls=1 --zipf=1 --files=set.txt --duration=60 --warmup=5 "
            "--seed=1 --threads=2");
  EXPECT_EQ(httperf_command_line(ok({"--wsesslog", "10,1.5,s.log", "--hog"}), 25.0),
            "httperf --hog --client=0/1 --server=localhost --port=80 --rate=25 "
            "--wsesslog=10,1.500,s.log --seed=1");
}

TEST(Options, PlanDescribesTheRun) {
  const std::string plan =
      describe_plan(ok({"--period", "e0.01", "--duration", "60", "--max-conns", "100", "--zipf",
                        "1.2", "--files", "set.txt", "--json", "out.json"}));
  for (const char* want : {"server:    localhost:80", "Zipf s=1.2", "Poisson arrivals",
                           "until the duration ends", "60 s", "max-conns: 100", "out.json"}) {
    EXPECT_NE(plan.find(want), std::string::npos) << want << "\n" << plan;
  }
}

}  // namespace
}  // namespace weft::load
