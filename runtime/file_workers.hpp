// FileWorkers: a small bounded pool of threads for file reads that would wait for the disk,
// as NGINX's `aio threads` (the epoll backend's counterpart of io_uring's bounded kernel
// workers).
//
// Linux has no non-blocking buffered file read for readiness-based I/O: epoll says a
// regular file is always ready, and a read of pages that are not cached sleeps in the
// kernel. The epoll driver therefore tries preadv2(RWF_NOWAIT) on the processor and hands
// only the reads that would block to this pool; the fiber parks meanwhile, so its
// processor runs other fibers. Threads start on demand, never more than the capacity (the
// sum of what each driver added), and stay until the pool is destroyed. A thread is started
// before the read is queued; when none can start and none runs, the read is made inline.
//
// Threads: pread() from any fiber; add_capacity() from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace weft::rt {

class Waiter;

class FileWorkers {
 public:
  /// Makes a pool of at most `capacity` threads, none started yet.
  explicit FileWorkers(unsigned capacity = 0) : capacity_(capacity) {}
  /// Joins the threads (after the queued reads finish).
  ~FileWorkers();
  FileWorkers(const FileWorkers&) = delete;
  FileWorkers& operator=(const FileWorkers&) = delete;

  /// Raises the thread limit by `n` (one driver's share).
  void add_capacity(unsigned n);

  /// Fiber: reads like pread(2) on a worker thread, parking the calling fiber until it is
  /// done (it cannot be interrupted: the buffer stays the kernel's until then), or on the
  /// calling thread when no worker runs and none can start; returns the count or -errno.
  int64_t pread(int fd, void* buf, std::size_t len, int64_t offset);

 private:
  struct Job {
    int fd;
    void* buf;
    std::size_t len;
    int64_t offset;
    int64_t result = 0;
    Waiter* waiter;
    Job* next = nullptr;
  };

  void work();
  // Starts one more thread; false when none could start (logged once).
  bool start_thread_locked();

  std::mutex mu_;
  std::condition_variable cv_;
  Job* head_ = nullptr;  // FIFO: oldest first
  Job* tail_ = nullptr;
  unsigned capacity_;
  unsigned idle_ = 0;
  bool stop_ = false;
  bool warned_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace weft::rt
