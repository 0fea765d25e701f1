// What the scheduler's files share and nothing else sees (scheduler.hpp is the interface):
// the tuning constants more than one of them reads. The files, by part: scheduler.cpp the
// lifecycle (making the runtime, starting and stopping its threads, control blocks),
// scheduler_switch.cpp running fibers and making them ready (a processor's loop, the switch,
// the queue tail and LIFO slot, waking a sleeper, the fiber functions), scheduler_pick.cpp
// picking the next fiber (the fast pick, stealing, helping), scheduler_idle.cpp the idle
// protocol and the looks at timers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::rt::detail {

// Consecutive LIFO hand-offs (LIFO-slot picks and dispatch spawns) before the queue head
// gets a turn. Tokio bounds its slot at 3; we allow 16 so dispatch keeps a spawn tree
// depth-first (few live stacks) while the oldest ready fiber still waits at most 16
// hand-offs. Picked, to be measured (skynet's peak RSS against transfer's maximum delay).
constexpr unsigned kMaxLifoStreak = 16;
// Looks per help_age: a fiber waits at most about help_age plus help_age / kLookPerAge
// before a busy processor notices it.
constexpr int64_t kLookPerAge = 4;
// How often (at most) a busy processor looks for other processors' due fiber wake-ups:
// they are late by this much at worst when their own processor is held. A look is one load
// per processor; picked like the help look interval.
constexpr int64_t kTimerLookNs = 25'000;
// Control blocks per chunk, and per-processor cache bound.
constexpr std::size_t kBlockChunk = 64;
constexpr std::size_t kBlockCacheMax = 256;

}  // namespace weft::rt::detail
