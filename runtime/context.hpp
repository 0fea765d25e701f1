// Execution contexts and the x86-64 context switch.
//
// A context is a stack plus the stack pointer saved when it was switched away from. The
// switch (context_x86_64.S) saves only what the System V ABI makes callee-saved: rbx, rbp,
// r12-r15, MXCSR and the x87 control word; everything else is caller-saved, so the compiler
// has already spilled what it needs before the call. We write our own rather than use
// Boost.Context because the switch is the runtime's hottest path and we want it inlined into
// one call with the sanitizer hand-offs around it.
//
// Sanitizers: ASan and TSan must be told about every switch (their shadow stacks and
// happens-before state are per stack); switch_context does that when built with them.
// Thread safety: a context is switched to by one thread at a time; the scheduler guarantees it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::rt {

/// A place execution can be switched into and out of: a fiber's stack or a processor's own
/// thread stack.
struct ExecContext {
  void* sp = nullptr;            // saved stack pointer while switched out
  void* stack_bottom = nullptr;  // lowest usable address (sanitizers need the extent)
  std::size_t stack_size = 0;
  void* asan_fake_stack = nullptr;  // ASan's fake-stack handle while switched out
  void* tsan_fiber = nullptr;       // TSan's fiber handle
};

/// Entry point of a fresh context: receives the value passed by the first switch into it and
/// the argument given to prepare_context. It must never return.
using ContextEntry = void (*)(void* transfer, void* arg);

/// Lays out a fresh context on [stack_bottom, stack_top) so that the first switch into it
/// calls entry(transfer, arg); stack_top must be 16-byte aligned.
void prepare_context(ExecContext& ctx, void* stack_bottom, void* stack_top, ContextEntry entry,
                     void* arg);

/// Saves the running context into `from` and resumes `to`, handing it `transfer`; returns the
/// transfer value given by whoever later switches back into `from`. Pass from_exiting=true
/// when `from` will never be resumed (its sanitizer state is then dropped).
void* switch_context(ExecContext& from, ExecContext& to, void* transfer, bool from_exiting);

/// Must be the first call in a ContextEntry: completes the sanitizer hand-off of the switch
/// that started this context.
void context_entered();

/// Fills `ctx` with the calling thread's own stack, so it can be switched out of and back to.
void adopt_thread_context(ExecContext& ctx);

/// Releases sanitizer state of a context that will never run again (not the running one).
void release_context(ExecContext& ctx);

}  // namespace weft::rt
