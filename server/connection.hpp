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
#include "server/request_parser.hpp"
#include "server/response.hpp"
#include "server/server_context.hpp"

namespace weft::http {

class Connection {
 public:
  /// Takes ownership of the accepted socket `fd` from `peer`.
  Connection(ServerContext& ctx, int fd, const sockaddr_storage& peer);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Serves the connection until it closes; `reject` answers 503 at once (over the limit).
  void run(bool reject);

  /// Shutdown: closes the connection now if it is idle; a busy one closes after its
  /// response. Any thread.
  void drain();

  /// Ends the connection's I/O at once (the grace period ran out). Any thread.
  void cancel() { token_.cancel(); }

  Connection* prev = nullptr;  // registry links, guarded by ServerContext::registry_mu
  Connection* next = nullptr;

 private:
  struct Reply;

  bool serve(const Request& req, rt::TimePoint started);
  bool respond_error(int status, const Request* req, bool close, std::string_view extra = {});
  bool send_reply(Reply& r, const Request* req);
  void begin_head(HeadBuffer& h, int status, bool close, const Request* req);
  bool queue(std::string_view head, const char* body, std::size_t body_len, FileRef hold);
  bool flush();
  bool send_file_body(const FileEntry& file, uint64_t offset, uint64_t length);
  bool send_with_sendfile(int file_fd, uint64_t offset, uint64_t length);
  bool send_with_splice(int file_fd, uint64_t offset, uint64_t length);
  void log_access(const Request* req, int status, uint64_t body_bytes, rt::TimePoint started);
  void lingering_close();
  rt::TimePoint send_deadline() const;

  ServerContext& ctx_;
  int fd_;
  char peer_[INET6_ADDRSTRLEN] = "-";
  rt::CancelToken token_;
  std::atomic<bool> idle_{true};
  RequestParser parser_;
  std::string path_;     // normalized request path, reused
  std::string scratch_;  // index-file paths and Location values, reused
  char* buf_ = nullptr;  // from the processor's pool: [read area | output arena]
  std::size_t read_cap_ = 0;
  std::size_t have_ = 0;
  unsigned requests_ = 0;
  bool closing_ = false;

  // Queued output: up to kMaxIov slices, heads copied into the arena, bodies referenced
  // from their FileEntry (held until sent).
  static constexpr int kMaxIov = 32;
  static constexpr std::size_t kCopyBodyMax = 1024;  // bodies up to this go into the arena
  iovec iov_[kMaxIov];
  FileRef hold_[kMaxIov];
  int iov_count_ = 0;
  char* arena_ = nullptr;
  std::size_t arena_cap_ = 0;
  std::size_t arena_used_ = 0;
  uint64_t queued_bytes_ = 0;
};

}  // namespace weft::http
