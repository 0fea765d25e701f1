// Per-processor counters and their Prometheus text exposition (format 0.0.4).
#include "server/ops/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include <fmt/core.h>

namespace weft::http {
namespace {

// The statuses a table covers; anything at or above is "other" without a lookup.
constexpr int kStatusLimit = 600;

// Status -> index into Counters::requests, built at compile time: one load on the hot path.
constexpr auto kStatusIndex = [] {
  std::array<std::uint8_t, kStatusLimit> index{};
  index.fill(static_cast<std::uint8_t>(kStatusCodes.size()));
  for (std::size_t i = 0; i < kStatusCodes.size(); ++i)
    index[static_cast<std::size_t>(kStatusCodes[i])] = static_cast<std::uint8_t>(i);
  return index;
}();

struct Family {
  std::string_view name;
  std::string_view type;
  std::string_view help;
};

constexpr Family kRequests{"weft_requests_total", "counter",
                           "Requests answered, by status code (\"other\": a status not listed)."};
constexpr Family kResponseBytes{"weft_response_bytes_total", "counter",
                                "Bytes sent in responses, head and body."};
constexpr Family kConnectionsOpen{"weft_connections_open", "gauge", "Client connections open now."};
constexpr Family kConnections{"weft_connections_total", "counter", "Client connections accepted."};
constexpr Family kRejected{"weft_connections_rejected_total", "counter",
                           "Connections answered 503 because limits.max_connections were open."};
constexpr Family kShed{"weft_connections_shed_total", "counter",
                       "Connections reset under overload: accepted after waiting in the listen "
                       "queue longer than limits.max_queue_wait, or queued when a listener "
                       "paused."};
constexpr Family kPauses{"weft_listen_pauses_total", "counter",
                         "Times a listener stopped listening because its queue went stale "
                         "(limits.max_queue_wait)."};
constexpr Family kGateCloses{"weft_admission_gate_closes_total", "counter",
                             "Times a listener's admission gate closed: the wait predicted for a "
                             "new connection passed limits.queue_target, so new handshakes "
                             "were dropped until it fell under half of it."};
constexpr Family kFdHits{"weft_fd_cache_hits_total", "counter",
                         "File lookups answered by the fd cache."};
constexpr Family kFdMisses{"weft_fd_cache_misses_total", "counter",
                           "File lookups the fd cache had to open or stat."};
constexpr Family kBodyRanges{"weft_body_ranges_total", "counter",
                             "Pieces of file bodies (up to 1 MiB each) sent by io.body = "
                             "\"auto\", by path: path=\"resident\" (in the page cache: one "
                             "sendfile, inline) or path=\"cold\" (one read through the I/O "
                             "driver, then sent). Over TLS, each piece read and sealed (up to "
                             "io.cold_read_size), by whether its pages were cached."};
constexpr Family kColdBytes{"weft_body_cold_bytes_total", "counter",
                            "Bytes of file bodies read through the cold path (not in the page "
                            "cache when their range was sent)."};

constexpr Family kTlsHandshakes{"weft_tls_handshakes_total", "counter",
                                "TLS handshakes completed on server.listen_tls."};
constexpr Family kTlsFailures{"weft_tls_handshake_failures_total", "counter",
                              "TLS handshakes that failed (not TLS, no shared protocol, the "
                              "client left) or passed timeouts.header."};

constexpr Family kTlsKernel{"weft_tls_kernel_sessions_total", "counter",
                            "TLS handshakes completed that asked the kernel to make their records "
                            "(tls.ktls), by who makes them: the kernel (kTLS), or the library "
                            "where the kernel refused (no tls ULP, a cipher it lacks)."};

constexpr std::array<const Family*, 15> kFamilies = {
    &kRequests,   &kResponseBytes, &kConnectionsOpen, &kConnections, &kRejected,
    &kShed,       &kPauses,        &kGateCloses,      &kFdHits,      &kFdMisses,
    &kBodyRanges, &kColdBytes,     &kTlsHandshakes,   &kTlsFailures, &kTlsKernel};

bool is_metric_name(std::string_view name) {
  const auto first = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  };
  const auto rest = [&first](char c) { return first(c) || (c >= '0' && c <= '9'); };
  return !name.empty() && first(name[0]) && std::all_of(name.begin() + 1, name.end(), rest);
}

// Escapes HELP text as the format requires: '\' as "\\" and a newline as "\n".
void append_help(std::string& out, std::string_view help) {
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

void append_head(std::string& out, std::string_view name, std::string_view type,
                 std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  append_help(out, help);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// A gauge's value as the format spells it: Go's float syntax, "NaN", "+Inf", "-Inf".
void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}

void append_sample(std::string& out, const Family& f, std::uint64_t v) {
  append_head(out, f.name, f.type, f.help);
  fmt::format_to(std::back_inserter(out), "{} {}\n", f.name, v);
}

// A family of two samples told apart by one label: name{label="a"} and name{label="b"}.
void append_pair(std::string& out, const Family& f, std::string_view label, std::string_view a,
                 std::uint64_t va, std::string_view b, std::uint64_t vb) {
  append_head(out, f.name, f.type, f.help);
  fmt::format_to(std::back_inserter(out), "{0}{{{1}=\"{2}\"}} {3}\n{0}{{{1}=\"{4}\"}} {5}\n",
                 f.name, label, a, va, b, vb);
}

}  // namespace

Metrics::Metrics(unsigned processors)
    : count_(std::max(processors, 1u)), counters_(std::make_unique<Counters[]>(count_)) {}

void Metrics::on_request(unsigned processor, int status, uint64_t bytes_sent) {
  Counters& s = counters_of(processor);
  const std::size_t code = status >= 0 && status < kStatusLimit
                               ? kStatusIndex[static_cast<std::size_t>(status)]
                               : kOther;
  s.requests[code].fetch_add(1, std::memory_order_relaxed);
  s.response_bytes.fetch_add(bytes_sent, std::memory_order_relaxed);
}

void Metrics::on_connection_open(unsigned processor) {
  counters_of(processor).connections_opened.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::on_connection_close(unsigned processor) {
  counters_of(processor).connections_closed.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::on_fd_cache(unsigned processor, bool hit) {
  Counters& s = counters_of(processor);
  (hit ? s.fd_cache_hits : s.fd_cache_misses).fetch_add(1, std::memory_order_relaxed);
}

void Metrics::on_rejected_connection(unsigned processor) {
  counters_of(processor).connections_rejected.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::on_shed_connection(unsigned processor) {
  counters_of(processor).connections_shed.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::on_tls_handshake(unsigned processor, bool ok) {
  Counters& s = counters_of(processor);
  (ok ? s.tls_handshakes : s.tls_handshake_failures).fetch_add(1, std::memory_order_relaxed);
}

void Metrics::on_tls_kernel(unsigned processor, bool took) {
  Counters& s = counters_of(processor);
  (took ? s.tls_kernel : s.tls_kernel_refused).fetch_add(1, std::memory_order_relaxed);
}

void Metrics::on_listen_pause(unsigned processor, unsigned queued) {
  Counters& s = counters_of(processor);
  s.listen_pauses.fetch_add(1, std::memory_order_relaxed);
  s.connections_shed.fetch_add(queued, std::memory_order_relaxed);
}

void Metrics::on_gate_close(unsigned processor) {
  counters_of(processor).gate_closes.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::on_body_range(unsigned processor, bool resident, uint64_t cold_bytes) {
  Counters& s = counters_of(processor);
  (resident ? s.body_resident : s.body_cold).fetch_add(1, std::memory_order_relaxed);
  if (cold_bytes > 0) s.body_cold_bytes.fetch_add(cold_bytes, std::memory_order_relaxed);
}

void Metrics::add_gauge(std::string name, std::string help, std::function<double()> read) {
  add_family(std::move(name), std::move(help), std::move(read), "gauge");
}

void Metrics::add_counter(std::string name, std::string help, std::function<double()> read) {
  add_family(std::move(name), std::move(help), std::move(read), "counter");
}

void Metrics::add_family(std::string name, std::string help, std::function<double()> read,
                         const char* type) {
  if (!is_metric_name(name))
    throw std::invalid_argument(fmt::format("'{}' is not a valid metric name", name));
  std::lock_guard lock(gauges_mutex_);
  const bool taken =
      std::any_of(kFamilies.begin(), kFamilies.end(), [&](auto* f) { return f->name == name; }) ||
      std::any_of(gauges_.begin(), gauges_.end(), [&](auto& g) { return g.name == name; });
  if (taken) throw std::invalid_argument(fmt::format("metric '{}' already exists", name));
  gauges_.push_back({std::move(name), std::move(help), std::move(read), type});
}

std::string Metrics::render() const {
  // Each counter summed over the processors' copies.
  auto total = [this](std::atomic<uint64_t> Counters::*member) {
    uint64_t sum = 0;
    for (unsigned i = 0; i < count_; ++i)
      sum += (counters_[i].*member).load(std::memory_order_relaxed);
    return sum;
  };
  std::array<uint64_t, kCodes> requests{};
  for (unsigned i = 0; i < count_; ++i) {
    for (std::size_t c = 0; c < kCodes; ++c)
      requests[c] += counters_[i].requests[c].load(std::memory_order_relaxed);
  }

  std::string out;
  out.reserve(4096);
  append_head(out, kRequests.name, kRequests.type, kRequests.help);
  for (std::size_t c = 0; c < kCodes; ++c) {
    if (c == kOther) {
      fmt::format_to(std::back_inserter(out), "{}{{code=\"other\"}} {}\n", kRequests.name,
                     requests[c]);
    } else {
      fmt::format_to(std::back_inserter(out), "{}{{code=\"{}\"}} {}\n", kRequests.name,
                     kStatusCodes[c], requests[c]);
    }
  }
  append_sample(out, kResponseBytes, total(&Counters::response_bytes));
  // Processors' counters are read one after another, so a close may be counted without its
  // open (made on another processor's, read earlier); the gauge is clamped rather than shown
  // negative.
  const uint64_t opened = total(&Counters::connections_opened);
  const uint64_t closed = total(&Counters::connections_closed);
  append_sample(out, kConnectionsOpen, opened > closed ? opened - closed : 0);
  append_sample(out, kConnections, opened);
  append_sample(out, kRejected, total(&Counters::connections_rejected));
  append_sample(out, kShed, total(&Counters::connections_shed));
  append_sample(out, kPauses, total(&Counters::listen_pauses));
  append_sample(out, kGateCloses, total(&Counters::gate_closes));
  append_sample(out, kFdHits, total(&Counters::fd_cache_hits));
  append_sample(out, kFdMisses, total(&Counters::fd_cache_misses));
  append_pair(out, kBodyRanges, "path", "resident", total(&Counters::body_resident), "cold",
              total(&Counters::body_cold));
  append_sample(out, kColdBytes, total(&Counters::body_cold_bytes));
  append_sample(out, kTlsHandshakes, total(&Counters::tls_handshakes));
  append_sample(out, kTlsFailures, total(&Counters::tls_handshake_failures));
  append_pair(out, kTlsKernel, "records", "kernel", total(&Counters::tls_kernel), "library",
              total(&Counters::tls_kernel_refused));

  std::lock_guard lock(gauges_mutex_);
  for (const Gauge& g : gauges_) {
    append_head(out, g.name, g.type, g.help);
    out += g.name;
    out += ' ';
    append_value(out, g.read ? g.read() : std::nan(""));
    out += '\n';
  }
  return out;
}

}  // namespace weft::http
