// Tests runtime/run_queue: the global queue's FIFO order and lists; the local queue's FIFO
// order, its overflow of half the queue into the global one when full, and stealing half,
// including a thief racing the owner (each fiber taken exactly once). The queues hold
// Fiber pointers and never run them, so plain Fiber objects stand in.
#include "runtime/run_queue.hpp"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace weft::rt {
namespace {

TEST(GlobalQueueTest, FifoAndLists) {
  std::vector<Fiber> f(4);
  GlobalQueue q;
  EXPECT_TRUE(q.empty());
  q.push(&f[0]);
  f[1].next = &f[2];
  q.push_list(&f[1], &f[2], 2);
  q.push(&f[3]);
  EXPECT_EQ(q.size(), 4u);
  for (auto& expected : f) EXPECT_EQ(q.pop(), &expected);
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_TRUE(q.empty());
}

TEST(LocalQueueTest, FifoWithPeek) {
  std::vector<Fiber> f(10);
  LocalQueue q;
  GlobalQueue overflow;
  for (auto& x : f) q.push(&x, overflow);
  EXPECT_EQ(q.size(), 10u);
  EXPECT_EQ(q.peek(), &f[0]);
  for (auto& x : f) EXPECT_EQ(q.pop(), &x);
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_TRUE(overflow.empty());
}

TEST(LocalQueueTest, AFullQueueMovesHalfToTheGlobalQueue) {
  std::vector<Fiber> f(LocalQueue::kCapacity + 1);
  LocalQueue q;
  GlobalQueue overflow;
  for (auto& x : f) q.push(&x, overflow);
  // The older half went to the global queue with the new one; the rest stays local.
  EXPECT_EQ(q.size() + overflow.size(), f.size());
  EXPECT_EQ(overflow.size(), LocalQueue::kCapacity / 2 + 1);
  EXPECT_EQ(overflow.pop(), &f[0]);
  EXPECT_EQ(q.pop(), &f[LocalQueue::kCapacity / 2]);
}

TEST(LocalQueueTest, StealTakesHalfAndReturnsOneToRun) {
  std::vector<Fiber> f(10);
  LocalQueue victim, thief;
  GlobalQueue overflow;
  for (auto& x : f) victim.push(&x, overflow);
  Fiber* run = victim.steal_into(thief);
  EXPECT_EQ(run, &f[4]);  // the oldest five: four queued with the thief, one to run
  EXPECT_EQ(thief.size(), 4u);
  EXPECT_EQ(victim.size(), 5u);
  EXPECT_EQ(thief.pop(), &f[0]);
  EXPECT_EQ(victim.pop(), &f[5]);
  LocalQueue empty;
  EXPECT_EQ(empty.steal_into(thief), nullptr);
}

TEST(LocalQueueTest, AThiefRacingTheOwnerTakesEachFiberOnce) {
  constexpr int kFibers = 20000;
  std::vector<Fiber> f(kFibers);
  LocalQueue q;
  GlobalQueue overflow;
  std::atomic<bool> done{false};
  std::vector<Fiber*> stolen;
  std::thread thief([&] {
    LocalQueue mine;
    while (!done.load(std::memory_order_acquire) || !q.empty()) {
      if (Fiber* x = q.steal_into(mine)) {
        stolen.push_back(x);
        while (Fiber* y = mine.pop()) stolen.push_back(y);
      }
    }
  });
  std::vector<Fiber*> popped;
  for (int i = 0; i < kFibers; ++i) {
    q.push(&f[i], overflow);
    if (i % 3 == 0) {
      if (Fiber* x = q.pop()) popped.push_back(x);
    }
  }
  while (Fiber* x = q.pop()) popped.push_back(x);
  done.store(true, std::memory_order_release);
  thief.join();
  while (Fiber* x = overflow.pop()) popped.push_back(x);
  std::set<Fiber*> seen(popped.begin(), popped.end());
  for (Fiber* x : stolen) EXPECT_TRUE(seen.insert(x).second) << "taken twice";
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kFibers));
  EXPECT_EQ(popped.size() + stolen.size(), static_cast<std::size_t>(kFibers));
}

}  // namespace
}  // namespace weft::rt
