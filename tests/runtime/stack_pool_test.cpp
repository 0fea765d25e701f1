// Tests runtime/stack_pool: stacks are page-rounded, writable over their whole usable range
// and guarded below; released stacks are reused (from the cache, then the shared list)
// instead of mapped again; colours keep tops 64-byte aligned and within the stack.
#include "runtime/stack_pool.hpp"

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

namespace weft::rt {
namespace {

TEST(StackPoolTest, StacksAreRoundedWritableAndAligned) {
  StackPool pool(10000);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(pool.stack_size() % page, 0u);
  EXPECT_GE(pool.stack_size(), 10000u);
  StackPool::Cache cache;
  Stack s = pool.allocate(&cache);
  EXPECT_EQ(s.size, pool.stack_size());
  auto bottom = reinterpret_cast<std::uintptr_t>(s.bottom);
  auto top = reinterpret_cast<std::uintptr_t>(s.top);
  EXPECT_EQ(top % 64, 0u);
  EXPECT_GT(top, bottom);
  EXPECT_LE(top, bottom + s.size);
  EXPECT_GE(top + 4096, bottom + s.size);  // a colour of at most 4 KiB
  std::memset(s.bottom, 0xAB, s.size);     // every usable byte is writable
  pool.release(&cache, s);
}

TEST(StackPoolTest, ReleasedStacksAreReused) {
  StackPool pool(16 * 1024);
  StackPool::Cache cache;
  std::vector<Stack> held;
  for (int i = 0; i < 8; ++i) held.push_back(pool.allocate(&cache));
  EXPECT_EQ(pool.mapped(), 8u);
  std::set<void*> bottoms;
  for (const Stack& s : held) bottoms.insert(s.bottom);
  for (const Stack& s : held) pool.release(&cache, s);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(bottoms.count(pool.allocate(&cache).bottom));
  EXPECT_EQ(pool.mapped(), 8u);  // none mapped again
}

TEST(StackPoolTest, TheSharedListServesOtherCaches) {
  StackPool pool(16 * 1024);
  std::vector<Stack> held;
  for (int i = 0; i < 4; ++i) held.push_back(pool.allocate(nullptr));
  for (const Stack& s : held) pool.release(nullptr, s);  // no cache: the shared list
  StackPool::Cache other;
  for (int i = 0; i < 4; ++i) pool.allocate(&other);
  EXPECT_EQ(pool.mapped(), 4u);
}

// trim() gives back only what stayed unused for a whole period: the shared list's low-water
// mark since the previous trim, minus what it is told to keep.
TEST(StackPoolTest, TrimUnmapsOnlyWhatAPeriodLeftUnused) {
  StackPool pool(16 * 1024);
  std::vector<Stack> held;
  for (int i = 0; i < 20; ++i) held.push_back(pool.allocate(nullptr));
  for (const Stack& s : held) pool.release(nullptr, s);  // a burst is over: 20 free
  EXPECT_EQ(pool.trim(4), 0u) << "the burst's period: every stack was used in it";
  EXPECT_EQ(pool.mapped(), 20u);
  // A quiet period with a little steady use: 3 taken and given back.
  for (int round = 0; round < 5; ++round) {
    Stack a = pool.allocate(nullptr), b = pool.allocate(nullptr), c = pool.allocate(nullptr);
    pool.release(nullptr, a);
    pool.release(nullptr, b);
    pool.release(nullptr, c);
  }
  EXPECT_EQ(pool.trim(4), 13u) << "17 never used since the last trim, 4 kept";
  EXPECT_EQ(pool.mapped(), 7u);
  // What is left still works, and more can be mapped again.
  held.clear();
  for (int i = 0; i < 10; ++i) held.push_back(pool.allocate(nullptr));
  for (const Stack& s : held) std::memset(s.bottom, 0x5A, s.size);
  EXPECT_EQ(pool.mapped(), 10u);
  for (const Stack& s : held) pool.release(nullptr, s);
  EXPECT_EQ(pool.trim(0), 0u);  // all ten were in use during this period
  EXPECT_EQ(pool.trim(0), 10u);
  EXPECT_EQ(pool.mapped(), 0u);
}

TEST(StackPoolDeathTest, TheGuardPageStopsAnOverflow) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  StackPool pool(16 * 1024);
  Stack s = pool.allocate(nullptr);
  EXPECT_DEATH(static_cast<volatile char*>(s.bottom)[-1] = 1, "");
  pool.release(nullptr, s);
}

}  // namespace
}  // namespace weft::rt
