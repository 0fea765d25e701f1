// multipart/byteranges framing: boundaries and part heads, written into HeadBuffers.
#include "server/http/multipart.hpp"

#include <chrono>

#include <sys/random.h>

namespace weft::http {

std::string_view make_boundary(Boundary& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  unsigned char raw[kBoundaryLength / 2];
  if (::getrandom(raw, sizeof raw, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof raw)) {
    // Only before the kernel's pool is ready (early boot) or under a seccomp filter that
    // refuses getrandom: a counter mixed with the clock still gives a fresh boundary per
    // response, which is all RFC 2046 needs; only its unpredictability is lost.
    static thread_local std::uint64_t counter = 0;
    std::uint64_t x =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) +
        0x9e3779b97f4a7c15ULL * ++counter;
    for (unsigned char& b : raw) {
      x ^= x >> 31;
      x *= 0xbf58476d1ce4e5b9ULL;
      b = static_cast<unsigned char>(x >> 56);
    }
  }
  for (std::size_t i = 0; i < sizeof raw; ++i) {
    out[2 * i] = kHex[raw[i] >> 4];
    out[2 * i + 1] = kHex[raw[i] & 0xf];
  }
  return {out.data(), out.size()};
}

bool append_part_head(HeadBuffer& h, std::string_view boundary, std::string_view type,
                      ByteRange part, std::uint64_t size) {
  ContentRangeBuffer cr;
  return h.append("\r\n--") && h.append(boundary) && h.append("\r\n") &&
         h.field("Content-Type", type) &&
         h.field("Content-Range", format_part_range(part, size, cr)) && h.append("\r\n");
}

bool append_close_delimiter(HeadBuffer& h, std::string_view boundary) {
  return h.append("\r\n--") && h.append(boundary) && h.append("--\r\n");
}

std::optional<std::uint64_t> multipart_length(std::string_view boundary, std::string_view type,
                                              std::span<const ByteRange> parts,
                                              std::uint64_t size) {
  HeadBuffer h;
  std::uint64_t total = 0;
  for (const ByteRange& part : parts) {
    h.clear();
    if (!append_part_head(h, boundary, type, part, size)) return std::nullopt;
    total += h.size() + part.length;  // parts are disjoint: the sum stays below `size`
  }
  h.clear();
  append_close_delimiter(h, boundary);
  return total + h.size();
}

}  // namespace weft::http
