#include "server/net/connection_slots.hpp"

#include "server/net/connection.hpp"

namespace weft::http {

bool ConnectionSlots::take() {
  return take_free() || reclaim_oldest();
}

bool ConnectionSlots::take_free() {
  // A CAS, not fetch_add then check: two acceptors racing for the last slot must not both
  // get it, and the count must never be seen over the limit.
  unsigned n = open_.load(std::memory_order_relaxed);
  while (n < limit_.load(std::memory_order_relaxed)) {
    if (open_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

bool ConnectionSlots::reclaim_oldest() {
  if (idle_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard g(mu_);
  Connection* victim = oldest_;
  if (!victim) return false;
  unlink(victim);
  victim->slot.reclaimed = true;
  reclaimed_.fetch_add(1, std::memory_order_relaxed);
  // Under the lock: the victim cannot close (release() takes it) before its wait is told.
  // cancel() only queues the cancellation with the driver, so nothing runs inline here.
  victim->cancel();
  return true;
}

void ConnectionSlots::release(Connection* c) {
  bool reclaimed;
  {
    std::lock_guard g(mu_);
    if (c->slot.listed) unlink(c);
    reclaimed = c->slot.reclaimed;
  }
  if (!reclaimed) open_.fetch_sub(1, std::memory_order_relaxed);
}

void ConnectionSlots::enter_idle(Connection* c) {
  std::lock_guard g(mu_);
  Links& l = c->slot;
  l.prev = youngest_;
  l.next = nullptr;
  l.listed = true;
  if (youngest_) {
    youngest_->slot.next = c;
  } else {
    oldest_ = c;
  }
  youngest_ = c;
  idle_.fetch_add(1, std::memory_order_relaxed);
}

bool ConnectionSlots::leave_idle(Connection* c) {
  std::lock_guard g(mu_);
  if (c->slot.listed) unlink(c);
  return !c->slot.reclaimed;
}

void ConnectionSlots::unlink(Connection* c) {
  Links& l = c->slot;
  if (l.prev) {
    l.prev->slot.next = l.next;
  } else {
    oldest_ = l.next;
  }
  if (l.next) {
    l.next->slot.prev = l.prev;
  } else {
    youngest_ = l.prev;
  }
  l.prev = l.next = nullptr;
  l.listed = false;
  idle_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace weft::http
