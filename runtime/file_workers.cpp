#include "runtime/file_workers.hpp"

#include <cerrno>

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "runtime/waiter.hpp"

namespace weft::rt {

FileWorkers::~FileWorkers() {
  {
    std::lock_guard g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void FileWorkers::add_capacity(unsigned n) {
  std::lock_guard g(mu_);
  capacity_ += n;
}

int64_t FileWorkers::pread(int fd, void* buf, std::size_t len, int64_t offset) {
  Waiter waiter;
  Job job{.fd = fd, .buf = buf, .len = len, .offset = offset, .waiter = &waiter};
  {
    std::unique_lock g(mu_);
    // A new thread only when none is idle to take the job: a pool that serves cached
    // files never starts one. Started before the job is queued: the job lives on this
    // fiber's stack, so it must never wait in the queue for a thread that did not start.
    if (idle_ == 0 && threads_.size() < capacity_ && !start_thread_locked() && threads_.empty()) {
      // No thread at all (pthread_create failed: EAGAIN under a pids limit, RLIMIT_NPROC or
      // TasksMax, or ENOMEM): read here, blocking this processor as a plain pread would.
      g.unlock();
      ssize_t n;
      do {
        n = ::pread(fd, buf, len, offset);
      } while (n < 0 && errno == EINTR);
      return n < 0 ? -errno : n;
    }
    // Queued for a thread that is idle, just started, or busy but bound to come back.
    if (tail_) {
      tail_->next = &job;
    } else {
      head_ = &job;
    }
    tail_ = &job;
  }
  cv_.notify_one();
  waiter.wait();
  return job.result;
}

bool FileWorkers::start_thread_locked() {
  try {
    threads_.emplace_back([this] { work(); });
    return true;
  } catch (const std::exception& e) {  // std::system_error from pthread_create, bad_alloc
    if (!warned_) {
      warned_ = true;
      spdlog::warn("file workers: cannot start a thread ({}); {} running", e.what(),
                   threads_.size());
    }
    return false;
  }
}

void FileWorkers::work() {
  pthread_setname_np(pthread_self(), "weft-file");  // for ps and top
  std::unique_lock lock(mu_);
  while (true) {
    ++idle_;
    cv_.wait(lock, [this] { return head_ || stop_; });
    --idle_;
    if (!head_) return;  // stopping, nothing left
    Job* job = head_;
    head_ = job->next;
    if (!head_) tail_ = nullptr;
    lock.unlock();
    ssize_t n = ::pread(job->fd, job->buf, job->len, job->offset);
    job->result = n < 0 ? -errno : n;
    // After the wake the job (on the fiber's stack) may be gone: touch nothing of it.
    job->waiter->wake(false);
    lock.lock();
  }
}

}  // namespace weft::rt
