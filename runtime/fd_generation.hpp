// Connection generations: which descriptor numbers name connections accepted through the
// runtime, and which incarnation of the number each one is.
//
// The epoll backend registers an accepted connection once, edge-triggered, and keeps it
// registered until the connection closes (epoll_driver.cpp). Its processors remember what
// they registered per descriptor number, and a number is reused as soon as it is closed, so
// each must tell "the connection I registered" from "a new file under the same number",
// also when another processor closed the old one and accepted the new one. The generation
// tells: one process-wide counter per descriptor number, odd while the number names a
// connection accepted by the epoll backend, bumped on that accept and again when io::close
// or io::close_detached closes it. A processor's registration is valid only under the
// generation it was made with, and each event carries that generation, so an event of a
// closed connection never reaches a wait on the number's next owner.
//
// The contract this rests on (io.hpp): a connection accepted by io::accept is closed with
// io::close or io::close_detached. A plain close(2) leaves the number marked as that
// connection, and a processor that registered it would wait on a registration the kernel
// dropped with the file.
//
// Threads: any. Each counter is written only by the thread that accepts or closes its
// number, which the kernel orders (a number is handed out again only after its close).
#pragma once

#include <cstdint>

namespace weft::rt::fd_generation {

/// Returns the generation of descriptor number fd (odd: an open accepted connection; 0 for
/// numbers never seen, or too large to track).
uint32_t current(int fd);

/// Returns whether generation g names an open accepted connection.
inline bool is_connection(uint32_t g) {
  return (g & 1u) != 0;
}

/// Marks fd, just returned by accept, as a new connection; returns its generation.
uint32_t begin_connection(int fd);

/// Marks fd as no longer an accepted connection: call before close(2) (so that an event that
/// arrives meanwhile is already stale), or when the number turns out to name a new file.
void end_connection(int fd);

}  // namespace weft::rt::fd_generation
