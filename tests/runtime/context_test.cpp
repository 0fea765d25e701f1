// Tests runtime/context: the switch preserves callee-saved and floating-point state.
#include "runtime/context.hpp"

#include <cfenv>
#include <cstdint>

#include <gtest/gtest.h>
#include <sys/mman.h>

namespace weft::rt {
namespace {

struct Pair {
  ExecContext main;
  ExecContext other;
  int rounds = 0;
};

void ping(void*, void* arg) {
  context_entered();
  auto* p = static_cast<Pair*>(arg);
  while (true) {
    ++p->rounds;
    // Clobber callee-saved registers and FP control state on this side.
    asm volatile(
        "xor %%rbx, %%rbx\n\txor %%r12, %%r12\n\txor %%r13, %%r13\n\t"
        "xor %%r14, %%r14\n\txor %%r15, %%r15" ::
            : "rbx", "r12", "r13", "r14", "r15");
    std::fesetround(FE_UPWARD);
    switch_context(p->other, p->main, nullptr, false);
  }
}

class ContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mem_ = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem_, MAP_FAILED);
  }
  void TearDown() override {
    release_context(pair_.other);
    munmap(mem_, kSize);
  }
  static constexpr std::size_t kSize = 64 * 1024;
  void* mem_ = nullptr;
  Pair pair_;
};

TEST_F(ContextTest, TransferValueRoundTrips) {
  adopt_thread_context(pair_.main);
  prepare_context(pair_.other, mem_, static_cast<char*>(mem_) + kSize, &ping, &pair_);
  for (int i = 1; i <= 1000; ++i) {
    switch_context(pair_.main, pair_.other, nullptr, false);
    EXPECT_EQ(pair_.rounds, i);
  }
}

// Loads known values into rbx and r12-r15, calls fn(arg), and stores what those registers
// hold afterwards into out[0..4]. Written in assembly so that the compiler cannot keep the
// values anywhere but in the registers under test.
extern "C" void weft_test_call_preserving(uint64_t* out, void (*fn)(void*), void* arg);
asm(R"(
    .text
    .globl weft_test_call_preserving
    .type weft_test_call_preserving, @function
weft_test_call_preserving:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    pushq %rdi
    movabsq $0x1111111111111111, %rbx
    movabsq $0x2222222222222222, %r12
    movabsq $0x3333333333333333, %r13
    movabsq $0x4444444444444444, %r14
    movabsq $0x5555555555555555, %r15
    movq %rdx, %rdi
    callq *%rsi
    popq %rdi
    movq %rbx, 0(%rdi)
    movq %r12, 8(%rdi)
    movq %r13, 16(%rdi)
    movq %r14, 24(%rdi)
    movq %r15, 32(%rdi)
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size weft_test_call_preserving, .-weft_test_call_preserving
)");

TEST_F(ContextTest, PreservesCalleeSavedRegisters) {
  adopt_thread_context(pair_.main);
  prepare_context(pair_.other, mem_, static_cast<char*>(mem_) + kSize, &ping, &pair_);
  uint64_t out[5] = {};
  // The other side zeroes rbx and r12-r15 before switching back.
  weft_test_call_preserving(
      out,
      [](void* arg) {
        auto* p = static_cast<Pair*>(arg);
        switch_context(p->main, p->other, nullptr, false);
      },
      &pair_);
  EXPECT_EQ(out[0], 0x1111111111111111u);
  EXPECT_EQ(out[1], 0x2222222222222222u);
  EXPECT_EQ(out[2], 0x3333333333333333u);
  EXPECT_EQ(out[3], 0x4444444444444444u);
  EXPECT_EQ(out[4], 0x5555555555555555u);
  EXPECT_EQ(pair_.rounds, 1);
}

TEST_F(ContextTest, PreservesFloatingPointControlState) {
  adopt_thread_context(pair_.main);
  std::fesetround(FE_TOWARDZERO);
  prepare_context(pair_.other, mem_, static_cast<char*>(mem_) + kSize, &ping, &pair_);
  switch_context(pair_.main, pair_.other, nullptr, false);  // the other side sets FE_UPWARD
  EXPECT_EQ(std::fegetround(), FE_TOWARDZERO);
  uint16_t cw;
  asm volatile("fnstcw %0" : "=m"(cw));
  EXPECT_EQ(cw & 0x0C00, 0x0C00);  // x87 rounding: toward zero
  std::fesetround(FE_TONEAREST);
}

TEST_F(ContextTest, FreshContextInheritsCreatorsFpMode) {
  adopt_thread_context(pair_.main);
  std::fesetround(FE_DOWNWARD);
  static int seen;
  prepare_context(
      pair_.other, mem_, static_cast<char*>(mem_) + kSize,
      [](void*, void* arg) {
        context_entered();
        seen = std::fegetround();
        auto* p = static_cast<Pair*>(arg);
        switch_context(p->other, p->main, nullptr, true);
      },
      &pair_);
  std::fesetround(FE_TONEAREST);
  switch_context(pair_.main, pair_.other, nullptr, false);
  EXPECT_EQ(seen, FE_DOWNWARD);
}

}  // namespace
}  // namespace weft::rt
