// ConnectionSlots: limits.max_connections as an exact count of slots, and the connections
// waiting idle for their next request, oldest first, whose slots a new client may take.
//
// A slot is taken before a connection is made (take()) and given back when it closes
// (release()). When every slot is held, take() reclaims the slot of the connection that
// has been idle longest, as NGINX reuses its idle keep-alive connections: it cancels that
// connection, which closes without giving the slot back, because the slot already belongs to
// the newcomer. So the count never passes the limit, even for a moment, and a client holding
// every slot with idle connections cannot keep a new client out. Only when every slot is held
// by a connection that is working (reading a request, sending a response, or inside its
// short active wait, timeouts.active_wait) does take() fail: the caller answers 503.
//
// Threads: any. The count is one atomic (take() without reclaiming is one CAS); the idle
// list is a mutex-guarded intrusive list, touched when a connection goes idle without its
// fiber (at most once per timeouts.active_wait per connection) and when it wakes or closes.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace weft::http {

class Connection;

class ConnectionSlots {
 public:
  /// A connection's place in the idle list; owned by the Connection, guarded by the list.
  struct Links {
    Connection* prev = nullptr;
    Connection* next = nullptr;
    bool listed = false;     // in the idle list now
    bool reclaimed = false;  // its slot was handed to another connection: it must close
  };

  /// Counts at most `limit` connections.
  explicit ConnectionSlots(unsigned limit) : limit_(limit) {}

  /// Changes the limit (a reload). Lowered below the slots held, take() frees none until
  /// enough connections close, and reclaims idle ones meanwhile.
  void set_limit(unsigned limit) { limit_.store(limit, std::memory_order_relaxed); }
  ConnectionSlots(const ConnectionSlots&) = delete;
  ConnectionSlots& operator=(const ConnectionSlots&) = delete;

  /// Takes a slot for a new connection: a free one, else the slot of the connection idle the
  /// longest (which is cancelled and closes); false when every slot is held by a busy one.
  bool take();

  /// Gives back the slot of closing connection `c` (unless take() handed it on) and takes
  /// `c` off the idle list.
  void release(Connection* c);

  /// Puts `c`, now waiting for its next request without a fiber, at the young end of the
  /// idle list.
  void enter_idle(Connection* c);

  /// Takes `c` off the idle list as it wakes; false when its slot was reclaimed meanwhile
  /// (then `c` must close).
  bool leave_idle(Connection* c);

  /// Returns whether take() would succeed now without waiting (a free slot or an idle one).
  bool available() const {
    return open() < limit_.load(std::memory_order_relaxed) ||
           idle_.load(std::memory_order_relaxed) > 0;
  }

  /// Returns the number of slots held.
  unsigned open() const { return open_.load(std::memory_order_relaxed); }

  /// Returns the number of connections on the idle list.
  unsigned idle() const { return idle_.load(std::memory_order_relaxed); }

  /// Returns how many idle connections take() has closed to make room so far.
  uint64_t reclaimed() const { return reclaimed_.load(std::memory_order_relaxed); }

 private:
  bool take_free();
  bool reclaim_oldest();
  void unlink(Connection* c);

  std::atomic<unsigned> limit_;
  std::atomic<unsigned> open_{0};
  std::atomic<unsigned> idle_{0};  // length of the list, read without the lock
  std::atomic<uint64_t> reclaimed_{0};
  std::mutex mu_;
  Connection* oldest_ = nullptr;
  Connection* youngest_ = nullptr;
};

}  // namespace weft::http
