// weft::http::Metrics: the server's counters, and their Prometheus text exposition.
//
// Counters live in one block per processor, each on its own cache lines; a processor adds
// to its own block with relaxed atomic adds, so the hot path never shares a line with
// another processor, and render() sums the blocks. The processor count N is fixed at
// construction; callers name their processor (0..N-1), most through ProcessorMetrics. Any
// thread may add to any block (the adds are atomic, so sums stay exact; only speed
// suffers), and an index of N or more is folded into range.
//
// Threads: the on_* counters are for any thread, at any time. add_gauge() and render() may
// be called from any thread too (they share a mutex; render() calls the gauge callbacks
// under it, so a callback must not call add_gauge()). Sums are read block by block, not as
// one snapshot, so a scrape that races with requests may count a request in
// weft_requests_total and not yet in weft_response_bytes_total.
//
// Exposition (text format 0.0.4), every family with # HELP and # TYPE:
//   weft_requests_total{code="..."}   counter, one series per status of kStatusCodes and
//                                     code="other", all present from the start at 0 (so that
//                                     rate() sees the first request of each)
//   weft_response_bytes_total         counter, bytes_sent of on_request()
//   weft_connections_open             gauge, opened minus closed
//   weft_connections_total            counter, opened
//   weft_connections_rejected_total   counter, 503s over limits.max_connections
//   weft_connections_shed_total       counter, resets under overload (limits.max_queue_wait):
//                                     stale connections accepted, and those queued at a pause
//   weft_listen_pauses_total          counter, times an acceptor stopped listening under overload
//   weft_admission_gate_closes_total  counter, times a listener stopped taking new handshakes
//   weft_fd_cache_hits_total, weft_fd_cache_misses_total   counters
//   weft_body_ranges_total{path="resident"|"cold"}  counter, ranges io.body = "auto" sent
//   weft_body_cold_bytes_total        counter, bytes it read through the I/O driver
//   weft_tls_handshakes_total         counter, TLS handshakes completed (listen_tls)
//   weft_tls_handshake_failures_total counter, TLS handshakes failed or timed out
//   weft_tls_kernel_sessions_total{records="kernel"|"library"}  counter, of the handshakes
//                                     that asked for kTLS (tls.ktls), who makes the records
//   then each family registered with add_gauge() or add_counter(), in registration order.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/http/status.hpp"

namespace weft::http {

class Metrics {
 public:
  /// Makes zeroed counters for `processors` processors (0 is taken as 1).
  explicit Metrics(unsigned processors);

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  /// Counts one answered request with its status and the bytes sent for it.
  void on_request(unsigned processor, int status, uint64_t bytes_sent);

  /// Counts one accepted connection.
  void on_connection_open(unsigned processor);

  /// Counts one closed connection (on any processor: it need not be the one that opened it).
  void on_connection_close(unsigned processor);

  /// Counts one fd cache lookup, a hit or a miss.
  void on_fd_cache(unsigned processor, bool hit);

  /// Counts one connection answered 503 because limits.max_connections were open.
  void on_rejected_connection(unsigned processor);

  /// Counts one connection reset at accept because the server was overloaded.
  void on_shed_connection(unsigned processor);
  /// A TLS handshake ended: completed (`ok`), or failed or timed out.
  void on_tls_handshake(unsigned processor, bool ok);
  /// A completed handshake asked the kernel to make its records (tls.ktls): it `took` them,
  /// or refused (no "tls" ULP, a cipher it lacks) and the library makes them.
  void on_tls_kernel(unsigned processor, bool took);

  /// Counts one overload pause of a listener, and the `queued` connections it reset.
  void on_listen_pause(unsigned processor, unsigned queued);

  /// Counts one closing of a listener's admission gate (limits.queue_target).
  void on_gate_close(unsigned processor);

  /// Counts one file body range sent by io.body = "auto": resident (sendfile inline) or
  /// cold, with the bytes it read.
  void on_body_range(unsigned processor, bool resident, uint64_t cold_bytes);

  /// Adds a gauge family `name` read by calling `read` at each render(); throws
  /// std::invalid_argument when `name` is not a valid metric name or is already taken.
  void add_gauge(std::string name, std::string help, std::function<double()> read);

  /// Adds a counter family `name` read by calling `read` at each render(), for counts kept
  /// elsewhere (the compressor's); throws as add_gauge() does.
  void add_counter(std::string name, std::string help, std::function<double()> read);

  /// Returns every family in Prometheus text exposition format 0.0.4.
  std::string render() const;

 private:
  // Index of a status in a block's table: kStatusCodes' order, then "other".
  static constexpr std::size_t kOther = kStatusCodes.size();
  static constexpr std::size_t kCodes = kStatusCodes.size() + 1;

  // 128-byte alignment: x86's adjacent-line prefetcher pulls 64-byte lines in pairs, so
  // two processors' counters must not share a 128-byte block.
  struct alignas(128) Counters {
    std::array<std::atomic<uint64_t>, kCodes> requests{};
    std::atomic<uint64_t> response_bytes{0};
    std::atomic<uint64_t> connections_opened{0};
    std::atomic<uint64_t> connections_closed{0};
    std::atomic<uint64_t> connections_rejected{0};
    std::atomic<uint64_t> connections_shed{0};
    std::atomic<uint64_t> listen_pauses{0};
    std::atomic<uint64_t> gate_closes{0};
    std::atomic<uint64_t> fd_cache_hits{0};
    std::atomic<uint64_t> fd_cache_misses{0};
    std::atomic<uint64_t> body_resident{0};
    std::atomic<uint64_t> body_cold{0};
    std::atomic<uint64_t> body_cold_bytes{0};
    std::atomic<uint64_t> tls_handshakes{0};
    std::atomic<uint64_t> tls_handshake_failures{0};
    std::atomic<uint64_t> tls_kernel{0};
    std::atomic<uint64_t> tls_kernel_refused{0};
  };

  struct Gauge {
    std::string name;
    std::string help;
    std::function<double()> read;
    const char* type = "gauge";  // or "counter" (add_counter)
  };

  void add_family(std::string name, std::string help, std::function<double()> read,
                  const char* type);

  Counters& counters_of(unsigned processor) const {
    return counters_[processor < count_ ? processor : processor % count_];
  }

  const unsigned count_;
  const std::unique_ptr<Counters[]> counters_;
  mutable std::mutex gauges_mutex_;
  std::vector<Gauge> gauges_;
};

/// One processor's handle on a server's Metrics, which the server may not keep (metrics
/// off): each on_* counts on that processor's counters, or does nothing. Two words, made
/// where an event is counted (ServerContext::processor_metrics()).
class ProcessorMetrics {
 public:
  ProcessorMetrics(Metrics* metrics, unsigned processor) : m_(metrics), p_(processor) {}

  /// Metrics::on_request, on_connection_open ... on this processor; nothing without Metrics.
  void on_request(int status, uint64_t bytes_sent) const {
    if (m_) m_->on_request(p_, status, bytes_sent);
  }
  void on_connection_open() const {
    if (m_) m_->on_connection_open(p_);
  }
  void on_connection_close() const {
    if (m_) m_->on_connection_close(p_);
  }
  void on_fd_cache(bool hit) const {
    if (m_) m_->on_fd_cache(p_, hit);
  }
  void on_rejected_connection() const {
    if (m_) m_->on_rejected_connection(p_);
  }
  void on_shed_connection() const {
    if (m_) m_->on_shed_connection(p_);
  }
  void on_tls_handshake(bool ok) const {
    if (m_) m_->on_tls_handshake(p_, ok);
  }
  void on_tls_kernel(bool took) const {
    if (m_) m_->on_tls_kernel(p_, took);
  }
  void on_listen_pause(unsigned queued) const {
    if (m_) m_->on_listen_pause(p_, queued);
  }
  void on_gate_close() const {
    if (m_) m_->on_gate_close(p_);
  }
  void on_body_range(bool resident, uint64_t cold_bytes) const {
    if (m_) m_->on_body_range(p_, resident, cold_bytes);
  }

 private:
  Metrics* m_;
  unsigned p_;
};

}  // namespace weft::http
