// residency_bench: the cost of asking whether a file range is in the page cache, for the
// body path of io.body = "auto" (server/files/page_cache.hpp). Each way is timed on a cached file
// of 64 KiB and of 1 MiB, whole-file ranges, against a pread of the same range as the scale
// (docs/benchmarks.md, "Cold files"). Usage: residency_bench [--quick]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "server/files/page_cache.hpp"

namespace {

double ns_per_call(int iterations, const std::function<bool()>& f) {
  bool all = true;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) all &= f();
  auto t1 = std::chrono::steady_clock::now();
  if (!all) std::fprintf(stderr, "residency_bench: a probe said \"not resident\"\n");
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations;
}

bool nowait_byte(int fd, off_t off) {
  char c;
  iovec iov{&c, 1};
  return ::preadv2(fd, &iov, 1, off, RWF_NOWAIT) == 1;
}

bool mincore_all(int fd, std::size_t size) {
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return false;
  std::size_t pages = (size + 4095) / 4096;
  static std::vector<unsigned char> vec;
  vec.resize(pages);
  bool all = ::mincore(p, size, vec.data()) == 0;
  for (unsigned char v : vec) all &= (v & 1) != 0;
  ::munmap(p, size);
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int iterations = quick ? 1000 : 200000;
  char dir[] = "/var/tmp/weft-residency-XXXXXX";
  if (!::mkdtemp(dir)) {
    std::perror("mkdtemp");
    return 1;
  }
  std::printf("%-8s %-28s %10s\n", "size", "probe", "ns/call");
  for (std::size_t size : {std::size_t{64} << 10, std::size_t{1} << 20}) {
    std::string path = std::string(dir) + "/f";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    std::vector<char> buf(size, 'x');
    if (fd < 0 || ::pwrite(fd, buf.data(), size, 0) != static_cast<ssize_t>(size)) {
      std::perror("write");
      return 1;
    }
    const char* label = size == (64 << 10) ? "64k" : "1m";
    weft::http::ResidencyProbe how{};
    auto row = [&](const char* name, const std::function<bool()>& f) {
      std::printf("%-8s %-28s %10.0f\n", label, name, ns_per_call(iterations, f));
    };
    row("cachestat (range_resident)",
        [&] { return weft::http::range_resident(fd, 0, size, &how); });
    row("preadv2 NOWAIT, 2 bytes", [&] { return nowait_byte(fd, 0) && nowait_byte(fd, size - 1); });
    row("mmap + mincore + munmap", [&] { return mincore_all(fd, size); });
    row("pread of the range (scale)", [&] { return ::pread(fd, buf.data(), size, 0) > 0; });
    if (how != weft::http::ResidencyProbe::cachestat) {
      std::printf("(cachestat unavailable here: range_resident used preadv2)\n");
    }
    ::close(fd);
    ::unlink(path.c_str());
  }
  ::rmdir(dir);
  return 0;
}
