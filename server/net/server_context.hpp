// ServerContext: what every connection of one configuration generation shares, made by the
// Server (server.cpp) for each configuration it loads (at start and at each reload) before
// its first connection, and freed after its last.
//
// Connections register in a per-server list so shutdown can reach them: idle ones are
// closed at once, busy ones finish their response (draining), and at the end of the grace
// period the rest are cancelled through their tokens.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cancel.hpp"
#include "runtime/latch.hpp"
#include "runtime/semaphore.hpp"
#include "server/compress/compressor.hpp"
#include "server/core/config.hpp"
#include "server/core/processor.hpp"
#include "server/files/fd_cache.hpp"
#include "server/handler/connection_work.hpp"
#include "server/http/http_date.hpp"
#include "server/http/mime_map.hpp"
#include "server/net/connection_slots.hpp"
#include "server/ops/metrics.hpp"
#include "server/site/site_context.hpp"
#include "server/site/vhost.hpp"
#include "server/tls/tls_context.hpp"

namespace weft::http {

class AccessLog;
class Connection;

/// Pooled per-processor resources: connection working state, splice pipes and the cold
/// path's read buffers. Touching fresh memory costs ~15 us a page here, so they are reused;
/// trim() frees, after a burst, the working states and buffers that stayed unused for a
/// whole period (see StackPool::trim).
class ResourcePool {
 public:
  ResourcePool(const Config& config, std::size_t read_capacity, std::size_t pipe_size);
  ~ResourcePool();
  ResourcePool(const ResourcePool&) = delete;
  ResourcePool& operator=(const ResourcePool&) = delete;

  /// Returns working state with an empty buffer and a fresh parser (any thread).
  ConnectionWork* take_work();
  /// Gives working state back (any thread).
  void give_work(ConnectionWork* w);
  /// Returns an empty pipe {read, write} sized to pipe_size, or {-1,-1} with errno set.
  std::pair<int, int> take_pipe();
  /// Gives back a pipe; `clean` says it is empty (else it is closed, not reused).
  void give_pipe(std::pair<int, int> p, bool clean);
  /// Returns a read buffer of io.cold_read_size bytes, parking the calling fiber while
  /// max_lent_buffers() are out; null when `deadline` came first. Call on a fiber.
  std::unique_ptr<char[]> take_buffer(rt::TimePoint deadline);
  /// Gives a read buffer back (any thread).
  void give_buffer(std::unique_ptr<char[]> b);
  /// Returns how many read buffers are lent now (a snapshot, any thread).
  std::size_t lent_buffers() const;
  /// Returns how many read buffers may be lent at once: twice io.iowq_bounded. Reads beyond
  /// the bounded kernel workers (or the epoll backend's file threads) would only wait in the
  /// kernel holding their buffer; twice their number lets a piece be sent while the next is
  /// read.
  std::size_t max_lent_buffers() const { return max_lent_; }

  /// Frees the pooled working states unused since the previous call (the pool's low-water
  /// mark), keeping at least `keep`, and the read buffers likewise, keeping kKeepBuffers;
  /// returns how many working states were freed.
  std::size_t trim(std::size_t keep);

 private:
  static constexpr std::size_t kMaxPooledPipes =
      64;  // picked: a processor rarely splices more at once

  std::mutex mu_;
  const Config& config_;
  std::size_t read_capacity_;
  std::size_t pipe_size_;
  std::vector<ConnectionWork*> work_;  // oldest first: take_work() takes from the back
  std::size_t work_low_ = 0;           // fewest work_ held since the last trim()
  std::vector<std::pair<int, int>> pipes_;
  // Bounded: a burst of cold reads must not leave many megabytes idle until the next trim.
  static constexpr std::size_t kMaxPooledBuffers = 32;
  static constexpr std::size_t kKeepBuffers = 2;
  std::vector<std::unique_ptr<char[]>> buffers_;
  std::size_t buffers_low_ = 0;
  const std::size_t max_lent_;
  rt::Semaphore lendable_;  // max_lent_ permits, one per buffer lent
};

struct ServerContext {
  const Config& config;
  SiteContext main;  // the default site: [server]'s root and keys, the top-level rules
  int& root_fd;      // main.root_fd
  MimeMap mime;
  std::unique_ptr<Compressor> compressor;  // [compression], for every site of this generation
  DateCache dates;
  std::unique_ptr<FdCache>& files;                   // main.files: the default site's cache
  std::vector<std::unique_ptr<SiteContext>> vhosts;  // [[vhosts]] in file order (numbers 1, 2 ...)
  std::shared_ptr<AccessLog> access_log;  // shared by generations that write the same file
  std::shared_ptr<Metrics> metrics;       // shared by every generation of a server (reloads)
  std::vector<std::unique_ptr<ResourcePool>> pools;  // one per processor
  // listen_tls's certificates as this generation loaded them (null without listen_tls): a
  // reload loads them again for its connections, while these keep theirs.
  std::shared_ptr<const TlsContext> tls;

  // limits.max_connections, and the idle connections to reclaim: one count for every
  // generation of a server, so that a reload never lets twice as many in.
  std::shared_ptr<ConnectionSlots> shared_slots;
  ConnectionSlots& slots;
  std::atomic<bool> draining{false};  // shutdown began: finish the current response, close
  rt::WaitGroup connections;          // every connection fiber

  std::mutex registry_mu;
  Connection* registry_head = nullptr;  // live connections (intrusive list), for shutdown

  /// Makes the context of `c`, counting its connections in `slots` (shared with the other
  /// generations of its server), or in slots of its own when null.
  explicit ServerContext(const Config& c, std::shared_ptr<ConnectionSlots> slots = nullptr);
  ~ServerContext();

  /// Returns the site that answers `req` (vhost.hpp): the default one when no vhost is
  /// configured, at the cost of one branch.
  const SiteContext& site_for(const Request& req) const {
    if (vhosts.empty()) return main;
    return choose_site(vhosts, request_host(req), main);
  }

  /// Returns the site numbered `number` (SiteContext::number).
  const SiteContext& site(uint16_t number) const {
    return number == 0 ? main : *vhosts[number - 1];
  }

  /// Opens every site's root and makes its fd cache, the fd budget's `cache_entries` split
  /// between them and fd_cache.max_bytes counted for all together; returns "" or what failed.
  std::string open_sites(Metrics* metrics, std::size_t cache_entries);

  /// Returns the calling fiber's processor's handle on the metrics (a no-op without).
  ProcessorMetrics processor_metrics() const { return {metrics.get(), processor_index()}; }

  /// Returns the pool of the calling fiber's processor.
  ResourcePool& pool();

  /// Adds / removes a live connection.
  void enroll(Connection* c);
  void withdraw(Connection* c);

  /// Shutdown: closes idle connections now and tells busy ones to stop after their response.
  void begin_drain();
  /// Cancels every remaining connection's I/O (the grace period ran out).
  void cancel_all();
};

/// The context new connections go to, swapped by a reload while acceptors read it.
///
/// An acceptor pins the current context for each connection it admits (a Connection adds
/// itself to the context's `connections` while pinned); publish() swaps in the next one and
/// returns the previous once no acceptor holds a pin on it, so from then on its
/// `connections` only falls and its owner may wait for them and free it.
///
/// The pin counts live here, not in the contexts: a pinner that read a context and was
/// preempted before counting its pin would otherwise write into a context that publish()
/// had meanwhile found unpinned and its owner freed (issue 32). Two slots alternate: each
/// publish() moves to the next epoch, whose parity names the slot holding the current
/// context and the count of its pins. A pin reads the epoch, counts itself in that epoch's
/// slot, and reads the epoch again: unchanged, the slot's context is the current one and
/// publish() will see the count (it stores the new epoch, then reads the old slot's count;
/// all sequentially consistent); changed, it uncounts and tries again. A slot is refilled
/// only two epochs later, after its count was seen at zero, so a pinner whose epoch went
/// stale only ever touches a counter, never a context. Pinning takes no lock: two loads, an
/// increment and a load, as cheap as the count inside the context was.
class CurrentContext {
 public:
  explicit CurrentContext(ServerContext* first = nullptr) { slots_[0].context.store(first); }

  /// Holds the context current at construction for the pin's lifetime.
  class Pin {
   public:
    explicit Pin(CurrentContext& current);
    ~Pin() { pins_->fetch_sub(1); }
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    ServerContext& ctx() const { return *ctx_; }

   private:
    std::atomic<unsigned>* pins_;
    ServerContext* ctx_;
  };

  /// Makes `next` current; returns the previous one once it is unpinned (parks 1 ms at a
  /// time meanwhile: a pin lasts one admission, or an overload pause of at most
  /// limits.max_queue_wait). One caller at a time (the server's main fiber). Call on a fiber.
  ServerContext* publish(ServerContext* next);

 private:
  struct Slot {
    std::atomic<ServerContext*> context{nullptr};
    std::atomic<unsigned> pins{0};  // pins taken while this slot's epoch was current
  };
  std::atomic<uint64_t> epoch_{0};  // the current context is slots_[epoch_ % 2]
  Slot slots_[2];
};

}  // namespace weft::http
