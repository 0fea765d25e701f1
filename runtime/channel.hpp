// Channel<T>: a bounded multi-producer multi-consumer queue whose blocking ends park fibers.
//
// A send into a full channel parks the sender with its value; a receive from an empty one
// parks the receiver. Values go straight from a parked sender to a receiver (and into a
// parked receiver's slot) when possible, so FIFO order holds across parking. close() wakes
// everyone: senders then fail, receivers drain what is buffered and then get nullopt.
// Values are moved under a spinlock: keep T cheap to move. Parked ends are woken after the
// lock is released (a woken fiber may destroy the channel at once; see waiter.hpp).
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/spinlock.hpp"
#include "runtime/waiter.hpp"

namespace weft::rt {

template <typename T>
class Channel {
 public:
  /// Makes a channel buffering up to `capacity` (>= 1) values.
  explicit Channel(std::size_t capacity) : buf_(capacity ? capacity : 1) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  /// Sends v, parking while the channel is full; returns false if the channel is closed.
  bool send(T v) {
    SendWaiter w;
    Waiter* receiver = nullptr;
    {
      std::lock_guard g(lock_);
      if (closed_) return false;
      receiver = hand_to_receiver(v);
      if (!receiver) {
        if (push(v)) return true;
        w.value = &v;
        senders_.push_back(&w);
      }
    }
    if (receiver) {
      receiver->wake();
      return true;
    }
    w.wait();
    return w.ok;
  }

  /// Sends v if there is room now; returns false when full or closed (v is then unchanged).
  bool try_send(T& v) {
    Waiter* receiver = nullptr;
    {
      std::lock_guard g(lock_);
      if (closed_) return false;
      receiver = hand_to_receiver(v);
      if (!receiver) return push(v);
    }
    receiver->wake();
    return true;
  }

  /// Receives the oldest value, parking while empty; nullopt once closed and drained.
  std::optional<T> recv() {
    RecvWaiter w;
    Waiter* sender = nullptr;
    std::optional<T> v;
    {
      std::lock_guard g(lock_);
      v = take(&sender);
      if (!v) {
        if (closed_) return std::nullopt;
        receivers_.push_back(&w);
      }
    }
    if (v) {
      if (sender) sender->wake();
      return v;
    }
    w.wait();
    return std::move(w.slot);
  }

  /// Receives a value if one is ready now; nullopt otherwise.
  std::optional<T> try_recv() {
    Waiter* sender = nullptr;
    std::optional<T> v;
    {
      std::lock_guard g(lock_);
      v = take(&sender);
    }
    if (sender) sender->wake();
    return v;
  }

  /// Closes the channel: pending and later sends fail, receivers drain then get nullopt.
  void close() {
    WaitList senders, receivers;
    {
      std::lock_guard g(lock_);
      closed_ = true;
      senders = senders_.take_all();
      receivers = receivers_.take_all();
    }
    while (Waiter* w = senders.pop_front()) {
      static_cast<SendWaiter*>(w)->ok = false;
      w->wake(false);
    }
    receivers.wake_all();
  }

  /// Returns whether close() was called.
  bool closed() const {
    std::lock_guard g(lock_);
    return closed_;
  }

  /// Returns the number of fibers parked in send() and recv() (a snapshot, for tests and
  /// diagnostics).
  std::size_t waiting() const {
    std::lock_guard g(lock_);
    return senders_.size() + receivers_.size();
  }

  /// Returns the number of buffered values (a snapshot).
  std::size_t size() const {
    std::lock_guard g(lock_);
    return count_;
  }

 private:
  struct SendWaiter : Waiter {
    T* value = nullptr;
    bool ok = true;
  };
  struct RecvWaiter : Waiter {
    std::optional<T> slot;
  };

  // All below run under lock_; the waiter they return is woken after it.
  // Moves v into the oldest parked receiver's slot and returns that receiver, or nullptr.
  Waiter* hand_to_receiver(T& v) {
    auto* r = static_cast<RecvWaiter*>(receivers_.pop_front());
    if (!r) return nullptr;
    r->slot.emplace(std::move(v));
    return r;
  }
  bool push(T& v) {
    if (count_ == buf_.size()) return false;
    buf_[(head_ + count_) % buf_.size()].emplace(std::move(v));
    ++count_;
    return true;
  }
  // Takes the oldest value; a parked sender whose value moved in is left in *sender.
  std::optional<T> take(Waiter** sender) {
    if (count_ == 0) {
      return std::nullopt;
    }
    std::optional<T> v = std::move(buf_[head_]);
    buf_[head_].reset();
    head_ = (head_ + 1) % buf_.size();
    --count_;
    // Room now: move the oldest parked sender's value in behind the others.
    if (auto* s = static_cast<SendWaiter*>(senders_.pop_front())) {
      push(*s->value);
      *sender = s;
    }
    return v;
  }

  mutable Spinlock lock_;
  std::vector<std::optional<T>> buf_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  bool closed_ = false;
  WaitList senders_;
  WaitList receivers_;
};

}  // namespace weft::rt
