// page_cache: whether a range of a file is in the page cache, asked without reading it.
//
// The body path (io.body = "auto") sends a resident range inline with sendfile, which never
// waits for the disk then, and reads any other range through the I/O driver, which never
// blocks the processor (rt::io::read_cold). The question is asked with cachestat(2) (Linux
// 6.5+): one system call that counts the cached pages of a range without touching them
// (chosen over mincore and preadv2 RWF_NOWAIT, which need a mapping or a read per question).
// It counts pages still being read too, so a one-byte preadv2(RWF_NOWAIT) of the range's
// last page (the last to arrive when readahead fills it) confirms that the range is readable
// now. Where it is missing, or refused (since Linux 6.14 it answers only for files the caller
// may write or owns), two one-byte preadv2(RWF_NOWAIT) reads, of the range's first and last
// page, stand in: a hole between them goes unseen, and its sendfile then waits for those
// pages.
#pragma once

#include <cstdint>

namespace weft::http {

/// How a residency question was answered.
enum class ResidencyProbe { cachestat, nowait_read };

/// Returns whether every page of [offset, offset + length) of file `fd` is in the page
/// cache (a length of 0 is resident); `probe`, when given, says how it was found out.
bool range_resident(int fd, uint64_t offset, uint64_t length, ResidencyProbe* probe = nullptr);

}  // namespace weft::http
