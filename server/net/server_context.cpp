#include "server/net/server_context.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include "runtime/scheduler.hpp"
#include "server/core/processor.hpp"
#include "server/files/fd_budget.hpp"
#include "server/net/connection.hpp"
#include "server/ops/access_log.hpp"
#include "server/ops/metrics.hpp"

namespace weft::http {

ResourcePool::ResourcePool(const Config& config, std::size_t read_capacity, std::size_t pipe_size)
    : config_(config),
      read_capacity_(read_capacity),
      pipe_size_(pipe_size),
      max_lent_(2 * std::max(1u, config.iowq_bounded)),
      lendable_(static_cast<int64_t>(max_lent_)) {}

ResourcePool::~ResourcePool() {
  for (ConnectionWork* w : work_) delete w;
  for (auto [r, w] : pipes_) {
    ::close(r);
    ::close(w);
  }
}

ConnectionWork* ResourcePool::take_work() {
  {
    std::lock_guard g(mu_);
    if (!work_.empty()) {
      ConnectionWork* w = work_.back();
      work_.pop_back();
      work_low_ = std::min(work_low_, work_.size());
      return w;
    }
  }
  return new ConnectionWork(config_, read_capacity_);
}

void ResourcePool::give_work(ConnectionWork* w) {
  w->parser.reset();
  for (auto& h : w->hold) h.reset();
  w->iov_count = 0;
  w->arena_used = 0;
  w->outgoing_count = 0;
  w->notes.clear();
  std::lock_guard g(mu_);
  work_.push_back(w);
}

std::unique_ptr<char[]> ResourcePool::take_buffer(rt::TimePoint deadline) {
  if (!lendable_.try_acquire_until(deadline)) return nullptr;
  {
    std::lock_guard g(mu_);
    if (!buffers_.empty()) {
      std::unique_ptr<char[]> b = std::move(buffers_.back());
      buffers_.pop_back();
      buffers_low_ = std::min(buffers_low_, buffers_.size());
      return b;
    }
  }
  // Uninitialised: its pages are first touched by the read that fills them.
  return std::unique_ptr<char[]>(new char[config_.cold_read_size]);
}

void ResourcePool::give_buffer(std::unique_ptr<char[]> b) {
  {
    std::lock_guard g(mu_);
    if (buffers_.size() < kMaxPooledBuffers) buffers_.push_back(std::move(b));
  }
  lendable_.release();
}

std::size_t ResourcePool::lent_buffers() const {
  return max_lent_ - static_cast<std::size_t>(std::max<int64_t>(0, lendable_.available()));
}

std::size_t ResourcePool::trim(std::size_t keep) {
  std::vector<ConnectionWork*> unused;
  std::vector<std::unique_ptr<char[]>> unused_buffers;
  {
    std::lock_guard g(mu_);
    const std::size_t idle_buffers = std::min(buffers_low_, buffers_.size());
    const std::size_t drop = idle_buffers > kKeepBuffers ? idle_buffers - kKeepBuffers : 0;
    for (std::size_t i = 0; i < drop; ++i) {  // the oldest: take_buffer() takes from the back
      unused_buffers.push_back(std::move(buffers_[i]));
    }
    buffers_.erase(buffers_.begin(), buffers_.begin() + static_cast<std::ptrdiff_t>(drop));
    buffers_low_ = buffers_.size();
    const std::size_t idle = std::min(work_low_, work_.size());
    const std::size_t n = idle > keep ? idle - keep : 0;
    unused.assign(work_.begin(), work_.begin() + static_cast<std::ptrdiff_t>(n));
    work_.erase(work_.begin(), work_.begin() + static_cast<std::ptrdiff_t>(n));
    work_low_ = work_.size();
  }
  for (ConnectionWork* w : unused) delete w;  // outside the lock: take_work() must not wait
  return unused.size();
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
  // Bounded: a burst of splicing connections must not leave thousands of idle pipes.
  if (pipes_.size() >= kMaxPooledPipes) {
    ::close(p.first);
    ::close(p.second);
    return;
  }
  pipes_.push_back(p);
}

ServerContext::ServerContext(const Config& c, std::shared_ptr<ConnectionSlots> shared)
    : config(c),
      main(c),
      root_fd(main.root_fd),
      mime(load_mime_map(c)),
      compressor(std::make_unique<Compressor>(c)),
      files(main.files),
      shared_slots(shared ? std::move(shared)
                          : std::make_shared<ConnectionSlots>(c.max_connections)),
      slots(*shared_slots) {
  for (std::size_t i = 0; i < c.vhosts.size(); ++i) {
    vhosts.push_back(std::make_unique<SiteContext>(c, c.vhosts[i], static_cast<uint16_t>(i + 1)));
  }
  main.compressor = compressor.get();
  for (auto& v : vhosts) v->compressor = compressor.get();
}

ServerContext::~ServerContext() {
  // The caches first: they refer to the MIME map, which goes before the default site.
  compressor.reset();
  for (auto& v : vhosts) v->files.reset();
  files.reset();
}

std::string ServerContext::open_sites(Metrics* m, std::size_t cache_entries) {
  const std::size_t sites = 1 + vhosts.size();
  // Split, so that the sites' caches together stay within the budget (each keeps a few).
  const std::size_t each = std::max(FdBudget::kMinCacheEntries, cache_entries / sites);
  auto bytes = std::make_shared<std::atomic<uint64_t>>(0);
  if (int rc = main.open(config, mime, m, each, bytes); rc < 0) {
    return fmt::format("document root {}: {}", main.root.string(), std::strerror(-rc));
  }
  for (auto& v : vhosts) {
    if (int rc = v->open(config, mime, m, each, bytes); rc < 0) {
      return fmt::format("document root {} of vhost {}: {}", v->root.string(), v->name,
                         std::strerror(-rc));
    }
  }
  return {};
}

ResourcePool& ServerContext::pool() {
  return *pools[processor_index() % pools.size()];
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

CurrentContext::Pin::Pin(CurrentContext& current) {
  while (true) {
    const uint64_t epoch = current.epoch_.load();
    Slot& slot = current.slots_[epoch % 2];
    slot.pins.fetch_add(1);
    if (current.epoch_.load() == epoch) {  // publish() will see this pin before it returns
      pins_ = &slot.pins;
      ctx_ = slot.context.load();
      return;
    }
    slot.pins.fetch_sub(1);  // published meanwhile: pin the new one
  }
}

ServerContext* CurrentContext::publish(ServerContext* next) {
  const uint64_t epoch = epoch_.load();
  Slot& old = slots_[epoch % 2];
  // Free to refill: its last readers were waited for by the publish() before this one.
  slots_[(epoch + 1) % 2].context.store(next);
  epoch_.store(epoch + 1);
  // Bounded: a pin ends with its admission, or with an overload pause (max_queue_wait).
  while (old.pins.load() != 0) rt::sleep_for(std::chrono::milliseconds(1));
  return old.context.load();
}

void ServerContext::cancel_all() {
  std::lock_guard g(registry_mu);
  for (Connection* c = registry_head; c; c = c->next) c->cancel();
}

}  // namespace weft::http
