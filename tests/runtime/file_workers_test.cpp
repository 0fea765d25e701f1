// Tests runtime/file_workers: a read on a worker thread, and a read when no thread can start
// (pthread_create failing, as under a pids limit): made inline, nothing left queued on the
// fiber's stack, and the pool starts its thread once there is room again.
#include "runtime/file_workers.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/scheduler.hpp"

namespace weft::rt {
namespace {

// A file holding `content`, unlinked at once: gone with its descriptor.
class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char name[] = "/tmp/weft-file-workers-XXXXXX";
    fd_ = ::mkstemp(name);
    ::unlink(name);
    EXPECT_EQ(::write(fd_, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  }
  ~TempFile() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

int count_threads() {
  // Only the pool's own (named "weft-file"): a sanitizer starts threads of its own (TSan its
  // background thread at the first pthread_create), and those are not the pool's.
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char comm[32] = {};
    FILE* f = std::fopen(("/proc/self/task/" + std::string(e->d_name) + "/comm").c_str(), "r");
    if (!f) continue;
    if (std::fgets(comm, sizeof comm, f) && std::strncmp(comm, "weft-file", 9) == 0) ++n;
    std::fclose(f);
  }
  closedir(d);
  return n;
}

// The process's address space now, in bytes (/proc/self/statm counts pages).
std::size_t address_space() {
  unsigned long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

RuntimeOptions one_processor() {
  RuntimeOptions o;
  o.processors = 1;
  return o;
}

TEST(FileWorkers, ReadsOnAWorkerThread) {
  TempFile f("hello workers");
  FileWorkers pool(2);
  Runtime rt(one_processor());
  rt.run([&] {
    char buf[32] = {};
    const int before = count_threads();
    EXPECT_EQ(pool.pread(f.fd(), buf, sizeof buf, 0), 13);
    EXPECT_STREQ(buf, "hello workers");
    EXPECT_EQ(count_threads(), before + 1);
  });
}

// The child's part of ReadsInlineWhenNoThreadCanStart; returns its exit status.
int read_without_room_for_a_thread(int fd) {
  FileWorkers pool(1);
  Runtime rt(one_processor());
  int code = 0;
  rt.run([&] {
    // Stacks of 64 MiB from now on: larger than any that glibc kept from the threads that
    // ended before the fork (which it would reuse without mapping anything).
    pthread_attr_t attr;
    ::pthread_attr_init(&attr);
    ::pthread_attr_setstacksize(&attr, std::size_t{64} << 20);
    ::pthread_setattr_default_np(&attr);
    rlimit old{};
    ::getrlimit(RLIMIT_AS, &old);
    rlimit tight = old;
    // A mebibyte more: room for small allocations, none for a thread's stack.
    tight.rlim_cur = address_space() + (1 << 20);
    ::setrlimit(RLIMIT_AS, &tight);
    char buf[32] = {};
    int64_t n = -1;
    try {
      n = pool.pread(fd, buf, sizeof buf, 0);
    } catch (...) {
      code = 1;  // the old way: the exception left the job queued on this unwound stack
    }
    ::setrlimit(RLIMIT_AS, &old);
    if (code != 0) return;
    if (n != 11 || std::memcmp(buf, "read anyway", 11) != 0) {
      code = 2;
      return;
    }
    const int before = count_threads();
    n = pool.pread(fd, buf, sizeof buf, 0);
    if (n != 11 || count_threads() != before + 1) code = 3;
  });
  return code;
}

// With no room for a thread's stack, pthread_create fails with EAGAIN, as it does under a
// pids cgroup limit, TasksMax or RLIMIT_NPROC (which root is exempt from, hence the
// address-space limit here). In a child process: the limit is the whole process's.
TEST(FileWorkers, ReadsInlineWhenNoThreadCanStart) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space";
#endif
  TempFile f("read anyway");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(30);  // a read left waiting for no thread ends the child
    ::_exit(read_without_room_for_a_thread(f.fd()));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: pread threw; 2: it returned the wrong bytes; 3: no thread once there was room";
}

}  // namespace
}  // namespace weft::rt
