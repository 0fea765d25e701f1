// Error classes of weft-load: httperf's eight, under httperf's names, and three of its own.
//
// httperf counts a failed connection or call under one class, decided from the errno of the
// failing system call; weft-load keeps those classes and their meaning so the two "Errors:"
// lines read the same. weft-load adds http-4xx and http-5xx (a reply arrived, but with an
// error status: httperf counts these only in "Reply status") and bad-length (the body did not
// match its Content-Length or the manifest's size for the file). httperf's "Errors: total"
// sums its own eight classes only; the three extra classes are reported on their own line.
//
// errno values stay negative-free ints here: pass `err` as a positive errno (or `-res` of an
// io_uring completion). The whole mapping is one switch, error_class_from_errno().
#pragma once

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace weft::load {

enum class ErrorClass : std::uint8_t {
  kClientTimo,   // client-timo: --timeout expired while connecting, sending or waiting
  kSocketTimo,   // socket-timo: the kernel gave up on the TCP connection (ETIMEDOUT)
  kConnRefused,  // connrefused: ECONNREFUSED
  kConnReset,    // connreset: ECONNRESET, EPIPE, ECONNABORTED, or closed before the reply ended
  kFdUnavail,    // fd-unavail: out of file descriptors (EMFILE) or at --max-conns
  kAddrUnavail,  // addrunavail: out of local ports (EADDRNOTAVAIL)
  kFtabFull,     // ftab-full: the system file table is full (ENFILE)
  kOther,        // other: anything else; the engine should log the first errno it sees
  kHttp4xx,      // http-4xx: a complete reply with a 4xx status
  kHttp5xx,      // http-5xx: a complete reply with a 5xx status
  kBadLength,    // bad-length: body length disagrees with Content-Length or the manifest
};

/// Number of error classes; ErrorClass values are 0..kErrorClassCount-1.
inline constexpr std::size_t kErrorClassCount = 11;

/// Number of classes httperf itself has (the first ones); they make up "Errors: total".
inline constexpr std::size_t kHttperfErrorClassCount = 8;

/// Returns the class's name as httperf (or weft-load, for its own classes) prints it.
constexpr std::string_view error_class_name(ErrorClass c) {
  switch (c) {
    case ErrorClass::kClientTimo:
      return "client-timo";
    case ErrorClass::kSocketTimo:
      return "socket-timo";
    case ErrorClass::kConnRefused:
      return "connrefused";
    case ErrorClass::kConnReset:
      return "connreset";
    case ErrorClass::kFdUnavail:
      return "fd-unavail";
    case ErrorClass::kAddrUnavail:
      return "addrunavail";
    case ErrorClass::kFtabFull:
      return "ftab-full";
    case ErrorClass::kOther:
      return "other";
    case ErrorClass::kHttp4xx:
      return "http-4xx";
    case ErrorClass::kHttp5xx:
      return "http-5xx";
    case ErrorClass::kBadLength:
      return "bad-length";
  }
  return "other";
}

/// Returns the class whose name() is `name`, or nullopt if there is none.
constexpr std::optional<ErrorClass> error_class_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kErrorClassCount; ++i) {
    auto c = static_cast<ErrorClass>(i);
    if (error_class_name(c) == name) return c;
  }
  return std::nullopt;
}

/// Returns the class a failed connect(), send() or recv() counts under, given its positive errno.
///
/// The same errno means the same thing in all three places, so there is one table:
///   EMFILE                          -> fd-unavail  (this process is out of descriptors)
///   ENFILE                          -> ftab-full   (the system is)
///   ECONNREFUSED                    -> connrefused
///   ETIMEDOUT                       -> socket-timo (SYN or retransmission timeout in the kernel)
///   ECONNRESET, EPIPE, ECONNABORTED -> connreset   (the peer reset or closed under us)
///   EADDRNOTAVAIL                   -> addrunavail (no free local port for the 4-tuple)
///   ETIME, ECANCELED                -> client-timo (an io_uring linked timeout, i.e. --timeout,
///                                      cut the operation short; the engine must not count
///                                      its own cancellations at shutdown)
///   anything else                   -> other
/// httperf also counts EINVAL as fd-unavail, because select() on Linux reported descriptors
/// past FD_SETSIZE that way; weft-load does not use select(), so EINVAL is "other" here.
constexpr ErrorClass error_class_from_errno(int err) {
  switch (err) {
    case EMFILE:
      return ErrorClass::kFdUnavail;
    case ENFILE:
      return ErrorClass::kFtabFull;
    case ECONNREFUSED:
      return ErrorClass::kConnRefused;
    case ETIMEDOUT:
      return ErrorClass::kSocketTimo;
    case ECONNRESET:
    case EPIPE:
    case ECONNABORTED:
      return ErrorClass::kConnReset;
    case EADDRNOTAVAIL:
      return ErrorClass::kAddrUnavail;
    case ETIME:
    case ECANCELED:
      return ErrorClass::kClientTimo;
    default:
      return ErrorClass::kOther;
  }
}

/// Returns http-4xx or http-5xx for such a status, nullopt for any other status.
constexpr std::optional<ErrorClass> error_class_from_status(int status) {
  if (status >= 400 && status <= 499) return ErrorClass::kHttp4xx;
  if (status >= 500 && status <= 599) return ErrorClass::kHttp5xx;
  return std::nullopt;
}

/// Counts per error class; one per thread, merged at the end.
struct ErrorCounts {
  std::array<std::uint64_t, kErrorClassCount> count{};

  /// Adds `n` errors of class `c`.
  void add(ErrorClass c, std::uint64_t n = 1) { count[static_cast<std::size_t>(c)] += n; }

  /// Returns the number of errors of class `c`.
  std::uint64_t operator[](ErrorClass c) const { return count[static_cast<std::size_t>(c)]; }

  /// Returns the sum of httperf's eight classes, the figure "Errors: total" prints.
  std::uint64_t httperf_total() const {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < kHttperfErrorClassCount; ++i) total += count[i];
    return total;
  }

  /// Returns the sum over all classes, weft-load's own included.
  std::uint64_t total() const {
    std::uint64_t total = 0;
    for (auto n : count) total += n;
    return total;
  }

  /// Adds every count of `other` to this one.
  void merge(const ErrorCounts& other) {
    for (std::size_t i = 0; i < kErrorClassCount; ++i) count[i] += other.count[i];
  }

  friend bool operator==(const ErrorCounts&, const ErrorCounts&) = default;
};

}  // namespace weft::load
