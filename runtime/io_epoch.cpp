#include "runtime/io_epoch.hpp"

#include "runtime/fiber.hpp"

namespace weft::rt {

uint64_t io_stamp() {
  const Fiber* f = current_fiber();
  return f ? f->io_stamp : kNoIoStamp;
}

void set_io_stamp(uint64_t stamp) {
  if (Fiber* f = current_fiber()) f->io_stamp = stamp;
}

}  // namespace weft::rt
