#include "loadgen/report.hpp"

#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "loadgen/stats_json.hpp"

#include "weft_version.hpp"

namespace weft::load {

namespace {

double ratio(double a, double b) {
  return b != 0.0 ? a / b : 0.0;
}
double ratio(std::uint64_t a, std::uint64_t b) {
  return ratio(static_cast<double>(a), static_cast<double>(b));
}
double ms(double ns) {
  return ns / 1e6;
}
double ms(std::uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

struct Percentiles {
  std::uint64_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, mean = 0;  // milliseconds
};

Percentiles percentiles_of(const Histogram& h) {
  Percentiles p;
  p.count = h.count();
  p.p50 = ms(h.percentile(50));
  p.p90 = ms(h.percentile(90));
  p.p99 = ms(h.percentile(99));
  p.p999 = ms(h.percentile(99.9));
  p.max = ms(h.max());
  p.mean = ms(h.mean());
  return p;
}

// Every derived figure, computed once so text, JSON and CSV agree.
struct Figures {
  double delta = 0;
  std::uint64_t replies = 0;
  double conn_rate = 0, conn_period_ms = 0;
  double conn_min_ms = 0, conn_avg_ms = 0, conn_max_ms = 0, conn_median_ms = 0;
  double conn_stddev_ms = 0, connect_ms = 0, conn_length = 0;
  double req_rate = 0, req_period_ms = 0, req_size = 0;
  RateSamples reply_rate;
  double response_ms = 0, transfer_ms = 0;
  double header_size = 0, content_size = 0, footer_size = 0;
  double cpu_user_pct = 0, cpu_system_pct = 0, cpu_total_pct = 0;
  double net_kb_per_s = 0, net_mbps = 0;
  Percentiles from_schedule, from_send;
  double lag_max_ms = 0, lag_mean_ms = 0;
  RateSamples session_rate;
  double conns_per_session = 0, session_lifetime_s = 0, session_failtime_s = 0;
};

Figures figures_of(const Stats& s) {
  Figures f;
  f.delta = s.duration_s;
  f.replies = s.replies();
  f.conn_rate = ratio(static_cast<double>(s.connections), f.delta);
  f.conn_period_ms = 1e3 * ratio(f.delta, static_cast<double>(s.connections));
  const Histogram& life = s.connection_time;
  if (life.count() > 0) {
    f.conn_min_ms = ms(life.min());
    f.conn_avg_ms = ms(life.mean());
    f.conn_max_ms = ms(life.max());
    f.conn_median_ms = ms(life.percentile(50));
    f.conn_stddev_ms = ms(life.stddev());
  }
  f.connect_ms = ms(s.connect_time.mean());
  f.conn_length = ratio(f.replies, life.count());
  f.req_rate = ratio(static_cast<double>(s.requests), f.delta);
  f.req_period_ms = 1e3 * ratio(f.delta, static_cast<double>(s.requests));
  f.req_size = ratio(s.request_bytes, s.requests);
  f.reply_rate = s.reply_rate(5);
  f.response_ms = ms(s.response_time.mean());
  f.transfer_ms = ms(s.transfer_time.mean());
  f.header_size = ratio(s.reply_header_bytes, f.replies);
  f.content_size = ratio(s.reply_body_bytes, f.replies);
  f.footer_size = ratio(s.reply_footer_bytes, f.replies);
  f.cpu_user_pct = 100.0 * ratio(s.cpu.user_s, f.delta);
  f.cpu_system_pct = 100.0 * ratio(s.cpu.system_s, f.delta);
  f.cpu_total_pct = 100.0 * ratio(s.cpu.user_s + s.cpu.system_s, f.delta);
  const double wire = static_cast<double>(s.bytes_sent + s.bytes_received);
  f.net_kb_per_s = ratio(wire, f.delta) / 1024.0;
  f.net_mbps = 8e-6 * ratio(wire, f.delta);
  f.from_schedule = percentiles_of(s.latency_from_schedule);
  f.from_send = percentiles_of(s.latency_from_send);
  f.lag_max_ms = ms(s.schedule_lag_ns.max);
  f.lag_mean_ms = ms(s.schedule_lag_ns.mean());
  f.session_rate = s.session_rate(5);
  f.conns_per_session = ratio(s.connections, s.sessions_started);
  f.session_lifetime_s = ratio(s.session_lifetime_sum_s, static_cast<double>(s.sessions_completed));
  f.session_failtime_s = ratio(s.session_failtime_sum_s, static_cast<double>(s.sessions_failed));
  return f;
}

std::uint64_t err(const Stats& s, ErrorClass c) {
  return s.errors[c];
}

void append_latency_line(std::string& out, std::string_view label, const Percentiles& p) {
  out += fmt::format(
      "{} [ms]: p50 {:.3f} p90 {:.3f} p99 {:.3f} p99.9 {:.3f} max {:.3f} ({} replies)\n", label,
      p.p50, p.p90, p.p99, p.p999, p.max, p.count);
}

// ---- JSON ----

class JsonWriter {
 public:
  void open_object() { open('{'); }
  void open_array() { open('['); }
  void close_object() { close('}'); }
  void close_array() { close(']'); }

  // Starts a member of the current object; the next value or open_* is its value.
  JsonWriter& key(std::string_view k) {
    separate();
    string(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }

  void value(std::uint64_t v) {
    separate();
    out_ += fmt::format("{}", v);
  }
  void value(double v) {
    separate();
    // JSON has no NaN or infinity; the shortest round-trip form of a finite double is valid.
    out_ += std::isfinite(v) ? fmt::format("{}", v) : std::string{"null"};
  }
  void value(bool v) {
    separate();
    out_ += v ? "true" : "false";
  }
  void value(std::string_view v) {
    separate();
    string(v);
  }
  // Writes `text`, already JSON, as the next value.
  void raw(std::string_view text) {
    separate();
    out_ += text;
  }

  std::string take() { return std::move(out_); }

 private:
  void open(char c) {
    separate();
    out_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    out_ += c;
    first_.pop_back();
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void string(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\r':
          out_ += "\\r";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (c < 0x20) {
            out_ += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
          } else {
            out_ += ch;
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

void json_rate(JsonWriter& j, const RateSamples& r) {
  j.open_object();
  j.key("min").value(r.min);
  j.key("avg").value(r.avg);
  j.key("max").value(r.max);
  j.key("stddev").value(r.stddev);
  j.key("samples").value(r.count);
  j.close_object();
}

void json_latency(JsonWriter& j, const Percentiles& p) {
  j.open_object();
  j.key("count").value(p.count);
  j.key("p50").value(p.p50);
  j.key("p90").value(p.p90);
  j.key("p99").value(p.p99);
  j.key("p99.9").value(p.p999);
  j.key("max").value(p.max);
  j.key("mean").value(p.mean);
  j.close_object();
}

// Writes the "connections" member: counts, rates and connection times.
void json_connections(JsonWriter& j, const Stats& s, const Figures& f) {
  j.key("connections").open_object();
  j.key("total").value(s.connections);
  j.key("established").value(s.connects);
  j.key("with_replies").value(s.connection_time.count());
  j.key("rate_per_s").value(f.conn_rate);
  j.key("period_ms").value(f.conn_period_ms);
  j.key("max_concurrent").value(s.max_open_connections);
  j.key("time_ms").open_object();
  j.key("min").value(f.conn_min_ms);
  j.key("avg").value(f.conn_avg_ms);
  j.key("max").value(f.conn_max_ms);
  j.key("median").value(f.conn_median_ms);
  j.key("stddev").value(f.conn_stddev_ms);
  j.close_object();
  j.key("connect_ms").value(f.connect_ms);
  j.key("length_replies_per_conn").value(f.conn_length);
  j.close_object();
}

// Writes the "requests" member: count, rate and size of the requests sent.
void json_requests(JsonWriter& j, const Stats& s, const Figures& f) {
  j.key("requests").open_object();
  j.key("total").value(s.requests);
  j.key("rate_per_s").value(f.req_rate);
  j.key("period_ms").value(f.req_period_ms);
  j.key("size_avg_bytes").value(f.req_size);
  j.key("bytes").value(s.request_bytes);
  j.close_object();
}

// Writes the "replies" member: rate, times, sizes and status classes.
void json_replies(JsonWriter& j, const Stats& s, const Figures& f) {
  j.key("replies").open_object();
  j.key("total").value(f.replies);
  j.key("rate_per_s");
  json_rate(j, f.reply_rate);
  j.key("response_ms").value(f.response_ms);
  j.key("transfer_ms").value(f.transfer_ms);
  j.key("size_avg_bytes").open_object();
  j.key("header").value(f.header_size);
  j.key("content").value(f.content_size);
  j.key("footer").value(f.footer_size);
  j.key("total").value(f.header_size + f.content_size + f.footer_size);
  j.close_object();
  j.key("bytes").open_object();
  j.key("header").value(s.reply_header_bytes);
  j.key("content").value(s.reply_body_bytes);
  j.key("footer").value(s.reply_footer_bytes);
  j.close_object();
  j.key("status").open_object();
  for (std::size_t k = 1; k <= 5; ++k) j.key(fmt::format("{}xx", k)).value(s.replies_by_class[k]);
  j.key("other").value(s.replies_by_class[0]);
  j.close_object();
  j.close_object();
}

// Writes the "cpu" member: weft-load's own processor time in the measured window.
void json_cpu(JsonWriter& j, const Stats& s, const Figures& f) {
  j.key("cpu").open_object();
  j.key("user_s").value(s.cpu.user_s);
  j.key("system_s").value(s.cpu.system_s);
  j.key("user_pct").value(f.cpu_user_pct);
  j.key("system_pct").value(f.cpu_system_pct);
  j.key("total_pct").value(f.cpu_total_pct);
  j.close_object();
}

// Writes the "net_io" member: bytes on the wire, in total and per second.
void json_net_io(JsonWriter& j, const Stats& s, const Figures& f) {
  j.key("net_io").open_object();
  j.key("kb_per_s").value(f.net_kb_per_s);
  j.key("mbit_per_s").value(f.net_mbps);
  j.key("bytes_sent").value(s.bytes_sent);
  j.key("bytes_received").value(s.bytes_received);
  j.close_object();
}

// Writes the "errors" member: httperf's total, then every error class.
void json_errors(JsonWriter& j, const Stats& s) {
  j.key("errors").open_object();
  j.key("total").value(s.errors.httperf_total());
  j.key("all_classes_total").value(s.errors.total());
  for (std::size_t k = 0; k < kErrorClassCount; ++k) {
    j.key(error_class_name(static_cast<ErrorClass>(k))).value(s.errors.count[k]);
  }
  j.close_object();
}

// Writes the "latency_ms" member: latency from schedule and from send.
void json_latencies(JsonWriter& j, const Figures& f) {
  j.key("latency_ms").open_object();
  j.key("from_schedule");
  json_latency(j, f.from_schedule);
  j.key("from_send");
  json_latency(j, f.from_send);
  j.close_object();
}

// Writes the "schedule_lag_ms" member: how late sessions started.
void json_schedule_lag(JsonWriter& j, const Stats& s, const Figures& f) {
  j.key("schedule_lag_ms").open_object();
  j.key("max").value(f.lag_max_ms);
  j.key("mean").value(f.lag_mean_ms);
  j.key("sessions").value(s.schedule_lag_ns.count);
  j.key("late_sessions").value(s.sessions_late);
  j.key("late_threshold_ms").value(ms(kLateSessionNs));
  j.key("behind_schedule").value(s.sessions_late > 0);
  j.close_object();
}

// Writes the "sessions" member: session counts, rate and lengths.
void json_sessions(JsonWriter& j, const Stats& s, const Figures& f) {
  j.key("sessions").open_object();
  j.key("started").value(s.sessions_started);
  j.key("completed").value(s.sessions_completed);
  j.key("failed").value(s.sessions_failed);
  j.key("rate_per_s");
  json_rate(j, f.session_rate);
  j.key("connections_per_session").value(f.conns_per_session);
  j.key("lifetime_s").value(f.session_lifetime_s);
  j.key("failtime_s").value(f.session_failtime_s);
  j.key("length_histogram").open_array();
  for (auto n : s.session_length) j.value(n);
  j.close_array();
  j.close_object();
}

// Writes the "timeline" member: one object per second of the run.
void json_timeline(JsonWriter& j, const Stats& s) {
  j.key("timeline").open_array();
  for (std::size_t t = 0; t < s.timeline.size(); ++t) {
    const TimelineSecond& sec = s.timeline[t];
    j.open_object();
    j.key("t").value(std::uint64_t{t});
    j.key("sessions").value(sec.sessions);
    j.key("sessions_done").value(sec.sessions_done);
    j.key("connections").value(sec.connections);
    j.key("requests").value(sec.requests);
    j.key("replies").value(sec.replies);
    j.key("errors").value(sec.errors);
    j.key("bytes_received").value(sec.bytes_received);
    j.key("latency_from_send_mean_ms")
        .value(
            ms(ratio(static_cast<double>(sec.latency_sum_ns), static_cast<double>(sec.replies))));
    j.close_object();
  }
  j.close_array();
}

// ---- text ----

// Appends httperf's connection and request figures, which follow the command line.
void append_text_connections(std::string& out, const Stats& s, const Figures& f) {
  out += fmt::format("Maximum connect burst length: {}\n", s.max_connect_burst);
  out += '\n';
  out += fmt::format("Total: connections {} requests {} replies {} test-duration {:.3f} s\n",
                     s.connections, s.requests, f.replies, f.delta);
  out += '\n';
  out += fmt::format(
      "Connection rate: {:.1f} conn/s ({:.1f} ms/conn, <={} concurrent "
      "connections)\n",
      f.conn_rate, f.conn_period_ms, s.max_open_connections);
  out += fmt::format(
      "Connection time [ms]: min {:.1f} avg {:.1f} max {:.1f} median {:.1f} "
      "stddev {:.1f}\n",
      f.conn_min_ms, f.conn_avg_ms, f.conn_max_ms, f.conn_median_ms, f.conn_stddev_ms);
  out += fmt::format("Connection time [ms]: connect {:.1f}\n", f.connect_ms);
  out += fmt::format("Connection length [replies/conn]: {:.3f}\n", f.conn_length);
  out += '\n';
  out += fmt::format("Request rate: {:.1f} req/s ({:.1f} ms/req)\n", f.req_rate, f.req_period_ms);
  out += fmt::format("Request size [B]: {:.1f}\n", f.req_size);
}

// Appends httperf's reply, CPU, network and error figures.
void append_text_replies(std::string& out, const Stats& s, const Figures& f) {
  out += fmt::format(
      "Reply rate [replies/s]: min {:.1f} avg {:.1f} max {:.1f} stddev {:.1f} "
      "({} samples)\n",
      f.reply_rate.min, f.reply_rate.avg, f.reply_rate.max, f.reply_rate.stddev,
      f.reply_rate.count);
  out += fmt::format("Reply time [ms]: response {:.1f} transfer {:.1f}\n", f.response_ms,
                     f.transfer_ms);
  out += fmt::format("Reply size [B]: header {:.1f} content {:.1f} footer {:.1f} (total {:.1f})\n",
                     f.header_size, f.content_size, f.footer_size,
                     f.header_size + f.content_size + f.footer_size);
  out += fmt::format("Reply status: 1xx={} 2xx={} 3xx={} 4xx={} 5xx={}\n", s.replies_by_class[1],
                     s.replies_by_class[2], s.replies_by_class[3], s.replies_by_class[4],
                     s.replies_by_class[5]);
  out += '\n';
  out += fmt::format(
      "CPU time [s]: user {:.2f} system {:.2f} (user {:.1f}% system {:.1f}% total "
      "{:.1f}%)\n",
      s.cpu.user_s, s.cpu.system_s, f.cpu_user_pct, f.cpu_system_pct, f.cpu_total_pct);
  out += fmt::format("Net I/O: {:.1f} KB/s ({:.1f}*10^6 bps)\n", f.net_kb_per_s, f.net_mbps);
  out += '\n';
  out += fmt::format("Errors: total {} client-timo {} socket-timo {} connrefused {} connreset {}\n",
                     s.errors.httperf_total(), err(s, ErrorClass::kClientTimo),
                     err(s, ErrorClass::kSocketTimo), err(s, ErrorClass::kConnRefused),
                     err(s, ErrorClass::kConnReset));
  out += fmt::format("Errors: fd-unavail {} addrunavail {} ftab-full {} other {}\n",
                     err(s, ErrorClass::kFdUnavail), err(s, ErrorClass::kAddrUnavail),
                     err(s, ErrorClass::kFtabFull), err(s, ErrorClass::kOther));
}

// Appends httperf's session figures, which only --wsesslog runs print.
void append_text_sessions(std::string& out, const Stats& s, const Figures& f) {
  out += fmt::format(
      "Session rate [sess/s]: min {:.2f} avg {:.2f} max {:.2f} stddev {:.2f} "
      "({}/{})\n",
      f.session_rate.min, f.session_rate.avg, f.session_rate.max, f.session_rate.stddev,
      s.sessions_completed, s.sessions_started);
  out += fmt::format("Session: avg {:.2f} connections/session\n", f.conns_per_session);
  out += fmt::format("Session lifetime [s]: {:.1f}\n", f.session_lifetime_s);
  out += fmt::format("Session failtime [s]: {:.1f}\n", f.session_failtime_s);
  out += "Session length histogram:";
  for (auto n : s.session_length) out += fmt::format(" {}", n);
  out += '\n';
}

// Appends weft-load's own figures (latency, schedule lag, warmup), after httperf's.
void append_text_latency(std::string& out, const Stats& s, const Figures& f,
                         const ReportContext& c) {
  append_latency_line(out, "Latency from schedule", f.from_schedule);
  append_latency_line(out, "Latency from send", f.from_send);
  out += fmt::format("HTTP errors: http-4xx {} http-5xx {} bad-length {}\n",
                     err(s, ErrorClass::kHttp4xx), err(s, ErrorClass::kHttp5xx),
                     err(s, ErrorClass::kBadLength));
  out += fmt::format("Schedule lag [ms]: max {:.3f} mean {:.3f} ({} sessions)\n", f.lag_max_ms,
                     f.lag_mean_ms, s.schedule_lag_ns.count);
  if (s.sessions_late > 0) {
    out += fmt::format(
        "Behind schedule: {} of {} sessions started more than {:.3f} ms late (max {:.3f} ms); "
        "latency from schedule includes the lag\n",
        s.sessions_late, s.schedule_lag_ns.count, ms(kLateSessionNs), f.lag_max_ms);
  }
  if (c.warmup_s > 0.0) {
    out += fmt::format("Warmup [s]: {:.3f} (excluded from every figure above)\n", c.warmup_s);
  }
}

// ---- CSV ----

using Column = std::pair<std::string, std::string>;

std::vector<Column> csv_columns(const Stats& s, const ReportContext& c) {
  const Figures f = figures_of(s);
  std::vector<Column> cols;
  auto num = [&](std::string name, double v) {
    cols.emplace_back(std::move(name), std::isfinite(v) ? fmt::format("{:.3f}", v) : "");
  };
  auto count = [&](std::string name, std::uint64_t v) {
    cols.emplace_back(std::move(name), fmt::format("{}", v));
  };
  num("offered_rate", c.offered_rate);
  num("duration_s", f.delta);
  count("connections", s.connections);
  count("requests", s.requests);
  count("replies", f.replies);
  num("conn_rate", f.conn_rate);
  num("req_rate", f.req_rate);
  num("reply_rate_avg", f.reply_rate.avg);
  num("reply_rate_min", f.reply_rate.min);
  num("reply_rate_max", f.reply_rate.max);
  num("reply_rate_stddev", f.reply_rate.stddev);
  count("reply_rate_samples", f.reply_rate.count);
  num("conn_time_avg_ms", f.conn_avg_ms);
  num("connect_ms", f.connect_ms);
  num("response_ms", f.response_ms);
  num("transfer_ms", f.transfer_ms);
  for (auto [prefix, p] : {std::pair{"sched", &f.from_schedule}, std::pair{"send", &f.from_send}}) {
    num(fmt::format("lat_{}_p50_ms", prefix), p->p50);
    num(fmt::format("lat_{}_p90_ms", prefix), p->p90);
    num(fmt::format("lat_{}_p99_ms", prefix), p->p99);
    num(fmt::format("lat_{}_p999_ms", prefix), p->p999);
    num(fmt::format("lat_{}_max_ms", prefix), p->max);
  }
  for (std::size_t k = 1; k <= 5; ++k) count(fmt::format("status_{}xx", k), s.replies_by_class[k]);
  count("errors_total", s.errors.httperf_total());
  for (std::size_t k = 0; k < kErrorClassCount; ++k) {
    std::string name{error_class_name(static_cast<ErrorClass>(k))};
    for (char& ch : name) ch = ch == '-' ? '_' : ch;
    count(name, s.errors.count[k]);
  }
  num("lag_max_ms", f.lag_max_ms);
  num("lag_mean_ms", f.lag_mean_ms);
  count("late_sessions", s.sessions_late);
  num("net_io_kb_per_s", f.net_kb_per_s);
  num("cpu_total_pct", f.cpu_total_pct);
  return cols;
}

}  // namespace

std::string format_text_report(const Stats& s, const ReportContext& c) {
  const Figures f = figures_of(s);
  std::string out;
  if (!c.command_line.empty()) out += c.command_line + '\n';
  append_text_connections(out, s, f);
  out += '\n';
  append_text_replies(out, s, f);
  if (c.sessions) {
    out += '\n';
    append_text_sessions(out, s, f);
  }
  out += '\n';
  append_text_latency(out, s, f, c);
  if (c.tls) {
    out += fmt::format("TLS handshakes: {} offered a session {} resumed {}\n", c.tls->handshakes,
                       c.tls->offered, c.tls->resumed);
  }
  if (c.clients_of > 1) {
    out += fmt::format("Clients: {} of {} instances (", c.client_indexes.size(), c.clients_of);
    for (std::size_t k = 0; k < c.client_indexes.size(); ++k) {
      out += fmt::format("{}{}", k ? " " : "", c.client_indexes[k]);
    }
    out +=
        c.client_indexes.size() == c.clients_of ? "): the whole test\n" : "): part of the test\n";
  }
  return out;
}

std::string format_json_report(const Stats& s, const ReportContext& c) {
  const Figures f = figures_of(s);
  JsonWriter j;
  j.open_object();
  j.key("tool").value(std::string_view{"weft-load"});
  j.key("version").value(std::string_view{kWeftVersion});
  j.key("command").value(c.command_line);
  j.key("offered_rate").value(c.offered_rate);
  j.key("warmup_s").value(c.warmup_s);
  j.key("test_duration_s").value(f.delta);
  j.key("max_connect_burst").value(s.max_connect_burst);
  json_connections(j, s, f);
  json_requests(j, s, f);
  json_replies(j, s, f);
  json_cpu(j, s, f);
  json_net_io(j, s, f);
  json_errors(j, s);
  json_latencies(j, f);
  json_schedule_lag(j, s, f);
  json_sessions(j, s, f);
  json_timeline(j, s);
  if (c.tls) {
    j.key("tls").open_object();
    j.key("handshakes").value(c.tls->handshakes);
    j.key("offered").value(c.tls->offered);
    j.key("resumed").value(c.tls->resumed);
    j.close_object();
  }
  j.key("test").value(c.test);
  j.key("session_workload").value(c.sessions);
  j.key("clients").open_object();
  j.key("of").value(std::uint64_t{c.clients_of});
  j.key("indexes").open_array();
  for (auto i : c.client_indexes) j.value(std::uint64_t{i});
  j.close_array();
  j.close_object();
  j.key("raw").raw(stats_to_json(s).dump());
  j.close_object();
  return j.take() + '\n';
}

std::string csv_header() {
  std::string out;
  for (const auto& [name, value] : csv_columns(Stats{}, ReportContext{})) {
    if (!out.empty()) out += ',';
    out += name;
  }
  return out + '\n';
}

std::string format_csv_row(const Stats& s, const ReportContext& c) {
  std::string out;
  bool first = true;
  for (const auto& [name, value] : csv_columns(s, c)) {
    if (!first) out += ',';
    first = false;
    out += value;
  }
  return out + '\n';
}

}  // namespace weft::load
