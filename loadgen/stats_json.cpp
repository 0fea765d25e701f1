#include "loadgen/stats_json.hpp"

#include <fmt/core.h>

namespace weft::load {
namespace {

using nlohmann::json;

json histogram_to_json(const Histogram& h) {
  const Histogram::Snapshot s = h.snapshot();
  json buckets = json::array();
  for (const auto& [index, n] : s.buckets) buckets.push_back({index, n});
  return {{"count", s.count}, {"clamped", s.clamped}, {"min", s.min},      {"max", s.max},
          {"mean", s.mean},   {"m2", s.m2},           {"buckets", buckets}};
}

void histogram_from_json(const json& j, const char* name, Histogram& h) {
  Histogram::Snapshot s;
  s.count = j.at("count").get<std::uint64_t>();
  s.clamped = j.at("clamped").get<std::uint64_t>();
  s.min = j.at("min").get<std::uint64_t>();
  s.max = j.at("max").get<std::uint64_t>();
  s.mean = j.at("mean").get<double>();
  s.m2 = j.at("m2").get<double>();
  for (const json& b : j.at("buckets")) {
    s.buckets.emplace_back(b.at(0).get<std::uint32_t>(), b.at(1).get<std::uint64_t>());
  }
  if (!h.restore(s)) throw std::runtime_error(fmt::format("{}: inconsistent buckets", name));
}

// The histograms of Stats, by the name they carry in JSON.
template <class S>
auto histograms(S& s) {
  return std::array{std::pair{"connect_time", &s.connect_time},
                    std::pair{"connection_time", &s.connection_time},
                    std::pair{"response_time", &s.response_time},
                    std::pair{"transfer_time", &s.transfer_time},
                    std::pair{"latency_from_schedule", &s.latency_from_schedule},
                    std::pair{"latency_from_send", &s.latency_from_send}};
}

json timeline_to_json(const std::vector<TimelineSecond>& timeline) {
  json out = json::array();
  for (const TimelineSecond& t : timeline) {
    out.push_back({t.sessions, t.sessions_done, t.connections, t.requests, t.replies, t.errors,
                   t.bytes_received, t.latency_sum_ns});
  }
  return out;
}

std::vector<TimelineSecond> timeline_from_json(const json& j) {
  std::vector<TimelineSecond> out;
  for (const json& e : j) {
    TimelineSecond t;
    t.sessions = e.at(0).get<std::uint64_t>();
    t.sessions_done = e.at(1).get<std::uint64_t>();
    t.connections = e.at(2).get<std::uint64_t>();
    t.requests = e.at(3).get<std::uint64_t>();
    t.replies = e.at(4).get<std::uint64_t>();
    t.errors = e.at(5).get<std::uint64_t>();
    t.bytes_received = e.at(6).get<std::uint64_t>();
    t.latency_sum_ns = e.at(7).get<std::uint64_t>();
    out.push_back(t);
  }
  if (out.size() > kMaxTimelineSeconds) throw std::runtime_error("timeline: too long");
  return out;
}

json errors_to_json(const ErrorCounts& e) {
  json out = json::object();
  for (std::size_t k = 0; k < kErrorClassCount; ++k) {
    out[std::string{error_class_name(static_cast<ErrorClass>(k))}] = e.count[k];
  }
  return out;
}

ErrorCounts errors_from_json(const json& j) {
  ErrorCounts e;
  for (std::size_t k = 0; k < kErrorClassCount; ++k) {
    e.count[k] =
        j.at(std::string{error_class_name(static_cast<ErrorClass>(k))}).get<std::uint64_t>();
  }
  return e;
}

}  // namespace

nlohmann::json stats_to_json(const Stats& s) {
  json j = {
      {"connections", s.connections},
      {"connects", s.connects},
      {"max_open_connections", s.max_open_connections},
      {"max_connect_burst", s.max_connect_burst},
      {"requests", s.requests},
      {"request_bytes", s.request_bytes},
      {"replies_by_class", s.replies_by_class},
      {"reply_header_bytes", s.reply_header_bytes},
      {"reply_body_bytes", s.reply_body_bytes},
      {"reply_footer_bytes", s.reply_footer_bytes},
      {"bytes_sent", s.bytes_sent},
      {"bytes_received", s.bytes_received},
      {"errors", errors_to_json(s.errors)},
      {"schedule_lag_ns", {s.schedule_lag_ns.count, s.schedule_lag_ns.sum, s.schedule_lag_ns.max}},
      {"sessions_late", s.sessions_late},
      {"sessions_started", s.sessions_started},
      {"sessions_completed", s.sessions_completed},
      {"sessions_failed", s.sessions_failed},
      {"session_lifetime_sum_s", s.session_lifetime_sum_s},
      {"session_failtime_sum_s", s.session_failtime_sum_s},
      {"session_length", s.session_length},
      {"cpu", {s.cpu.user_s, s.cpu.system_s}},
      {"duration_s", s.duration_s},
      {"timeline", timeline_to_json(s.timeline)},
  };
  for (const auto& [name, h] : histograms(s)) j[name] = histogram_to_json(*h);
  return j;
}

std::optional<Stats> stats_from_json(const nlohmann::json& j, std::string& error) {
  Stats s;
  try {
    s.connections = j.at("connections").get<std::uint64_t>();
    s.connects = j.at("connects").get<std::uint64_t>();
    s.max_open_connections = j.at("max_open_connections").get<std::uint64_t>();
    s.max_connect_burst = j.at("max_connect_burst").get<std::uint64_t>();
    s.requests = j.at("requests").get<std::uint64_t>();
    s.request_bytes = j.at("request_bytes").get<std::uint64_t>();
    s.replies_by_class = j.at("replies_by_class").get<std::array<std::uint64_t, 6>>();
    s.reply_header_bytes = j.at("reply_header_bytes").get<std::uint64_t>();
    s.reply_body_bytes = j.at("reply_body_bytes").get<std::uint64_t>();
    s.reply_footer_bytes = j.at("reply_footer_bytes").get<std::uint64_t>();
    s.bytes_sent = j.at("bytes_sent").get<std::uint64_t>();
    s.bytes_received = j.at("bytes_received").get<std::uint64_t>();
    s.errors = errors_from_json(j.at("errors"));
    const json& lag = j.at("schedule_lag_ns");
    s.schedule_lag_ns = {lag.at(0).get<std::uint64_t>(), lag.at(1).get<double>(),
                         lag.at(2).get<double>()};
    s.sessions_late = j.at("sessions_late").get<std::uint64_t>();
    s.sessions_started = j.at("sessions_started").get<std::uint64_t>();
    s.sessions_completed = j.at("sessions_completed").get<std::uint64_t>();
    s.sessions_failed = j.at("sessions_failed").get<std::uint64_t>();
    s.session_lifetime_sum_s = j.at("session_lifetime_sum_s").get<double>();
    s.session_failtime_sum_s = j.at("session_failtime_sum_s").get<double>();
    s.session_length = j.at("session_length").get<std::vector<std::uint64_t>>();
    s.cpu = {j.at("cpu").at(0).get<double>(), j.at("cpu").at(1).get<double>()};
    s.duration_s = j.at("duration_s").get<double>();
    s.timeline = timeline_from_json(j.at("timeline"));
    for (const auto& [name, h] : histograms(s)) histogram_from_json(j.at(name), name, *h);
  } catch (const std::exception& e) {
    error = fmt::format("raw figures: {}", e.what());
    return std::nullopt;
  }
  return s;
}

}  // namespace weft::load
