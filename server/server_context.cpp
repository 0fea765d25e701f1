#include "server/server_context.hpp"

#include <cerrno>

#include <fcntl.h>
#include <unistd.h>

#include "runtime/scheduler.hpp"
#include "server/access_log.hpp"
#include "server/connection.hpp"
#include "server/metrics.hpp"

namespace weft::http {

ResourcePool::ResourcePool(std::size_t buffer_size, std::size_t pipe_size)
    : buffer_size_(buffer_size), pipe_size_(pipe_size) {}

ResourcePool::~ResourcePool() {
  for (char* b : buffers_) delete[] b;
  for (auto [r, w] : pipes_) {
    ::close(r);
    ::close(w);
  }
}

char* ResourcePool::take_buffer() {
  {
    std::lock_guard g(mu_);
    if (!buffers_.empty()) {
      char* b = buffers_.back();
      buffers_.pop_back();
      return b;
    }
  }
  return new char[buffer_size_];
}

void ResourcePool::give_buffer(char* b) {
  std::lock_guard g(mu_);
  buffers_.push_back(b);
}

std::pair<int, int> ResourcePool::take_pipe() {
  {
    std::lock_guard g(mu_);
    if (!pipes_.empty()) {
      auto p = pipes_.back();
      pipes_.pop_back();
      return p;
    }
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {-1, -1};
  // Larger pipes move more per splice; the kernel may refuse (pipe-max-size): keep default.
  ::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(pipe_size_));
  return {fds[0], fds[1]};
}

void ResourcePool::give_pipe(std::pair<int, int> p, bool clean) {
  if (!clean) {
    ::close(p.first);
    ::close(p.second);
    return;
  }
  std::lock_guard g(mu_);
  pipes_.push_back(p);
}

ServerContext::ServerContext(const Config& c) : config(c), mime(load_mime_map(c)) {}

ServerContext::~ServerContext() {
  files.reset();
  if (root_fd >= 0) ::close(root_fd);
}

ResourcePool& ServerContext::pool() {
  rt::Processor* p = rt::Processor::current();
  return *pools[p ? p->index() % pools.size() : 0];
}

void ServerContext::enroll(Connection* c) {
  std::lock_guard g(registry_mu);
  c->prev = nullptr;
  c->next = registry_head;
  if (registry_head) registry_head->prev = c;
  registry_head = c;
}

void ServerContext::withdraw(Connection* c) {
  std::lock_guard g(registry_mu);
  if (c->prev) {
    c->prev->next = c->next;
  } else {
    registry_head = c->next;
  }
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = nullptr;
}

void ServerContext::begin_drain() {
  draining.store(true, std::memory_order_release);
  std::lock_guard g(registry_mu);
  for (Connection* c = registry_head; c; c = c->next) c->drain();
}

void ServerContext::cancel_all() {
  std::lock_guard g(registry_mu);
  for (Connection* c = registry_head; c; c = c->next) c->cancel();
}

}  // namespace weft::http
