// Counts heap allocations made through operator new, so tests can check "allocates nothing".
#pragma once

#include <cstdint>

namespace weft::load::testing {

/// Returns how many times operator new has run in this thread since the program started.
std::uint64_t allocations();

}  // namespace weft::load::testing
