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

TEST(StackPoolDeathTest, TheGuardPageStopsAnOverflow) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  StackPool pool(16 * 1024);
  Stack s = pool.allocate(nullptr);
  EXPECT_DEATH(static_cast<volatile char*>(s.bottom)[-1] = 1, "");
  pool.release(nullptr, s);
}

}  // namespace
}  // namespace weft::rt
