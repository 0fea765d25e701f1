#include "runtime/context.hpp"

#include <cstring>

#include <pthread.h>

#if defined(WEFT_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(WEFT_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

extern "C" void* weft_rt_switch(void** save_sp, void* load_sp, void* transfer);
extern "C" void weft_rt_trampoline();

namespace weft::rt {

void prepare_context(ExecContext& ctx, void* stack_bottom, void* stack_top, ContextEntry entry,
                     void* arg) {
  auto* top = static_cast<uint64_t*>(stack_top);
  uint64_t* sp = top - 8;  // eight 8-byte slots; top is 16-aligned, so sp is too
  uint32_t mxcsr;
  uint16_t fpucw;
  // Fresh contexts inherit the creating thread's floating-point modes.
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  uint64_t fpstate = mxcsr | (uint64_t{fpucw} << 32);
  sp[0] = fpstate;
  sp[1] = 0;                                                // r15
  sp[2] = 0;                                                // r14
  sp[3] = reinterpret_cast<uint64_t>(arg);                  // r13
  sp[4] = reinterpret_cast<uint64_t>(entry);                // r12
  sp[5] = 0;                                                // rbx
  sp[6] = 0;                                                // rbp: ends frame-pointer walks
  sp[7] = reinterpret_cast<uint64_t>(&weft_rt_trampoline);  // return address
  ctx.sp = sp;
  ctx.stack_bottom = stack_bottom;
  ctx.stack_size =
      static_cast<std::size_t>(static_cast<char*>(stack_top) - static_cast<char*>(stack_bottom));
  ctx.asan_fake_stack = nullptr;
#if defined(WEFT_TSAN)
  if (!ctx.tsan_fiber) ctx.tsan_fiber = __tsan_create_fiber(0);
#endif
}

void* switch_context(ExecContext& from, ExecContext& to, void* transfer, bool from_exiting) {
#if defined(WEFT_ASAN)
  __sanitizer_start_switch_fiber(from_exiting ? nullptr : &from.asan_fake_stack, to.stack_bottom,
                                 to.stack_size);
#else
  (void)from_exiting;
#endif
#if defined(WEFT_TSAN)
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
  void* result = weft_rt_switch(&from.sp, to.sp, transfer);
#if defined(WEFT_ASAN)
  __sanitizer_finish_switch_fiber(from.asan_fake_stack, nullptr, nullptr);
#endif
  return result;
}

void context_entered() {
#if defined(WEFT_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
}

void adopt_thread_context(ExecContext& ctx) {
  pthread_attr_t attr;
  void* addr = nullptr;
  std::size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  ctx.stack_bottom = addr;
  ctx.stack_size = size;
#if defined(WEFT_TSAN)
  ctx.tsan_fiber = __tsan_get_current_fiber();
#endif
}

void release_context(ExecContext& ctx) {
#if defined(WEFT_TSAN)
  if (ctx.tsan_fiber) __tsan_destroy_fiber(ctx.tsan_fiber);
#endif
  ctx.tsan_fiber = nullptr;
}

}  // namespace weft::rt
