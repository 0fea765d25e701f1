#include "loadgen/merge.hpp"

#include <algorithm>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "loadgen/stats_json.hpp"

namespace weft::load {
namespace {

using nlohmann::json;

// One report read and checked: its figures and what identifies it.
struct Part {
  Stats stats;
  std::string test;
  std::string version;
  std::string command;
  bool session_workload = false;
  double warmup_s = 0.0;
  double offered_rate = 0.0;
  std::uint32_t of = 1;
  std::vector<std::uint32_t> indexes;
  std::optional<TlsCounts> tls;
};

std::optional<TlsCounts> tls_of(const json& j) {
  if (!j.contains("tls")) return std::nullopt;
  const json& t = j.at("tls");
  return TlsCounts{t.at("handshakes").get<std::uint64_t>(), t.value("offered", std::uint64_t{0}),
                   t.at("resumed").get<std::uint64_t>()};
}

// Reads one report; nullopt with `error` naming the file when it is not a mergeable one.
std::optional<Part> read_part(const MergeInput& in, std::string& error) {
  const json j = json::parse(in.text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    error = fmt::format("{}: not JSON", in.name);
    return std::nullopt;
  }
  if (j.is_array()) {
    error =
        fmt::format("{}: a --sweep report (an array of runs): merge each rate's reports", in.name);
    return std::nullopt;
  }
  if (!j.is_object() || j.value("tool", "") != "weft-load") {
    error = fmt::format("{}: not a weft-load JSON report", in.name);
    return std::nullopt;
  }
  if (!j.contains("raw") || !j.contains("test") || !j.contains("clients")) {
    error = fmt::format("{}: has no raw figures (written by a weft-load without merge)", in.name);
    return std::nullopt;
  }
  Part p;
  try {
    p.test = j.at("test").get<std::string>();
    p.version = j.at("version").get<std::string>();
    p.command = j.at("command").get<std::string>();
    p.session_workload = j.value("session_workload", false);
    p.warmup_s = j.at("warmup_s").get<double>();
    p.offered_rate = j.at("offered_rate").get<double>();
    p.of = j.at("clients").at("of").get<std::uint32_t>();
    p.indexes = j.at("clients").at("indexes").get<std::vector<std::uint32_t>>();
    p.tls = tls_of(j);
  } catch (const std::exception& e) {
    error = fmt::format("{}: {}", in.name, e.what());
    return std::nullopt;
  }
  auto stats = stats_from_json(j.at("raw"), error);
  if (!stats) {
    error = fmt::format("{}: {}", in.name, error);
    return std::nullopt;
  }
  p.stats = std::move(*stats);
  return p;
}

// Returns why `p` cannot join `first` (the first report), or nullopt when it can.
std::optional<std::string> mismatch(const Part& first, const Part& p) {
  if (p.version != first.version) {
    return fmt::format("weft-load {} against {}", p.version, first.version);
  }
  if (p.test != first.test)
    return fmt::format("another test:\n  {}\nagainst\n  {}", p.test, first.test);
  if (p.of != first.of) return fmt::format("a test split {} ways against {}", p.of, first.of);
  if (p.warmup_s != first.warmup_s || p.session_workload != first.session_workload) {
    return std::string{"another warmup or workload"};
  }
  if (p.tls.has_value() != first.tls.has_value()) return std::string{"TLS in one report only"};
  return std::nullopt;
}

}  // namespace

std::optional<MergedReport> merge_reports(const std::vector<MergeInput>& inputs,
                                          std::string& error) {
  if (inputs.empty()) {
    error = "no reports to merge";
    return std::nullopt;
  }
  std::vector<Part> parts;
  for (const MergeInput& in : inputs) {
    auto p = read_part(in, error);
    if (!p) return std::nullopt;
    if (!parts.empty()) {
      if (auto why = mismatch(parts.front(), *p)) {
        error = fmt::format("{}: cannot merge with {}: {}", in.name, inputs.front().name, *why);
        return std::nullopt;
      }
    }
    parts.push_back(std::move(*p));
  }
  MergedReport m;
  const Part& first = parts.front();
  std::vector<std::uint32_t> seen;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    for (auto i : parts[k].indexes) {
      if (i >= first.of || std::find(seen.begin(), seen.end(), i) != seen.end()) {
        error = fmt::format("{}: instance {} of {} is already merged (or out of range)",
                            inputs[k].name, i, first.of);
        return std::nullopt;
      }
      seen.push_back(i);
    }
    m.stats.merge(parts[k].stats);
    if (parts[k].tls) {
      if (!m.context.tls) m.context.tls = TlsCounts{};
      m.context.tls->handshakes += parts[k].tls->handshakes;
      m.context.tls->offered += parts[k].tls->offered;
      m.context.tls->resumed += parts[k].tls->resumed;
    }
  }
  std::sort(seen.begin(), seen.end());
  m.context.command_line = first.test;
  m.context.test = first.test;
  m.context.sessions = first.session_workload;
  m.context.warmup_s = first.warmup_s;
  m.context.offered_rate = first.offered_rate;
  m.context.clients_of = first.of;
  m.context.client_indexes = std::move(seen);
  return m;
}

std::optional<MergeOptions> parse_merge_options(int argc, const char* const* argv, int& exit_code,
                                                std::string& output) {
  MergeOptions o;
  CLI::App app{
      "weft-load merge: one report from the JSON reports of a test's instances (--client I/N), "
      "exact: counts add, histograms add bucket by bucket",
      "weft-load merge"};
  app.add_option("reports", o.files, "JSON reports (--json) of one test's instances")->required();
  app.add_option("--json", o.json_file, "write the merged JSON report to FILE");
  app.add_flag("--quiet", o.quiet, "print no text report");
  try {
    app.parse(argc - 1, argv + 1);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out;
    std::ostringstream err;
    exit_code = app.exit(e, out, err) == 0 ? 0 : 2;
    output = out.str() + err.str();
    return std::nullopt;
  }
  return o;
}

}  // namespace weft::load
