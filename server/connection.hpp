// Connection: one client connection, served by one fiber from accept to close.
//
// The loop: parse what the buffer holds (llhttp through RequestParser); when a request is
// complete, answer it (static_handler logic lives here, in serve()); drop its bytes and go
// on with a pipelined successor, or receive more. Responses to pipelined requests are queued
// and sent together when the buffer holds no further complete request; a large body flushes
// the queue first and then goes out with sendfile or splice.
//
// Timeouts: a request head must arrive within timeouts.header of its first byte (else 408);
// an idle keep-alive connection is closed after timeouts.keepalive; any send that makes no
// progress for timeouts.send ends the connection.
//
// Threads: the fiber owns everything here; shutdown (another fiber) only calls drain() and
// cancel(), which touch the atomic idle flag and the cancel token.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "runtime/clock.hpp"
#include "runtime/io_driver.hpp"
#include "server/file_entry.hpp"
#include "server/response.hpp"
#include "server/server_context.hpp"

namespace weft::http {

class Connection {
 public:
  /// Takes ownership of the accepted socket `fd` from `peer` and counts the connection as
  /// open; `rejected` makes it answer 503 and close (over limits.max_connections). Make it
  /// with new: it deletes itself when it closes.
  Connection(ServerContext& ctx, int fd, const sockaddr_storage& peer, bool rejected);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Serves `c` on the calling fiber until it closes (then deletes it) or goes idle (then a
  /// readiness wait owns it and starts a new fiber when the client sends again).
  static void start(Connection* c);

  /// Shutdown: closes the connection now if it is idle; a busy one closes after its
  /// response. Any thread.
  void drain();

  /// Ends the connection's I/O at once (the grace period ran out). Any thread.
  void cancel() { token_.cancel(); }

  Connection* prev = nullptr;  // registry links, guarded by ServerContext::registry_mu
  Connection* next = nullptr;

 private:
  struct Reply;
  enum class Outcome { closed, idle };

  // How long a connection waiting for its next request keeps its fiber and working state
  // before it goes idle without them. Picked: far above a busy client's gap between requests,
  // far below a browser's think time. A burst of new connections holds at most this much
  // of their arrivals' worth of stacks.
  static constexpr auto kActiveWait = std::chrono::milliseconds(100);
  static constexpr std::size_t kCopyBodyMax = 1024;  // bodies up to this go into the arena

  static void on_ready(void* arg, int result);
  Outcome run();
  Outcome go_idle();
  void acquire_work();
  void release_work();
  bool serve(const Request& req, rt::TimePoint started);
  bool respond_listing(const Request& req, bool close, uint64_t* sent);
  bool respond_error(int status, const Request* req, bool close, std::string_view extra = {});
  bool send_reply(Reply& r, const Request* req);
  void begin_head(HeadBuffer& h, int status, bool close, const Request* req);
  bool queue(std::string_view head, const char* body, std::size_t body_len, FileRef hold);
  // Sends everything queued; `flags` go to send (MSG_MORE when a file body follows).
  bool flush(int flags = 0);
  bool send_file_body(const FileEntry& file, uint64_t offset, uint64_t length);
  bool send_with_sendfile(const FileEntry& file, uint64_t offset, uint64_t length);
  bool send_with_splice(const FileEntry& file, uint64_t offset, uint64_t length);
  void on_body_error(const FileEntry& file, int64_t result);
  void log_access(const Request* req, int status, uint64_t body_bytes, rt::TimePoint started);
  void lingering_close();
  rt::TimePoint send_deadline() const;

  // Kept for the connection's life (a few hundred bytes: all an idle connection costs).
  ServerContext& ctx_;
  int fd_;
  bool rejected_;
  bool closing_ = false;
  char peer_[INET6_ADDRSTRLEN] = "-";
  rt::CancelToken token_;
  std::atomic<bool> idle_{false};
  rt::ReadyWait ready_;
  unsigned requests_ = 0;
  std::size_t have_ = 0;  // bytes in the read area (0 whenever idle)
  rt::TimePoint request_started_{};
  rt::TimePoint idle_deadline_{};  // end of the current wait for a request

  // Borrowed from the processor's pool while serving (see ConnectionWork).
  ConnectionWork* work_ = nullptr;
  int iov_count_ = 0;
  std::size_t arena_used_ = 0;
  uint64_t queued_bytes_ = 0;
};

}  // namespace weft::http
