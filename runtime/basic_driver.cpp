// The basic driver: an eventfd that unpark() writes and park() waits for with poll(2).
// Used by runtimes that do no I/O (and by tests of the scheduler alone).
#include <atomic>
#include <cerrno>
#include <system_error>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "runtime/driver.hpp"

namespace weft::rt {
namespace {

class BasicDriver final : public Driver {
 public:
  BasicDriver() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~BasicDriver() override { close(fd_); }

  const char* name() const override { return "basic"; }

  int poll() override { return 0; }

  void park(int64_t timeout_ns) override {
    // An unpark before this point left the eventfd readable, so ppoll returns at once: no
    // wake-up is lost. Reading it afterwards re-arms it for the next park.
    pollfd p{fd_, POLLIN, 0};
    timespec ts{timeout_ns / 1'000'000'000, timeout_ns % 1'000'000'000};
    ::ppoll(&p, 1, timeout_ns < 0 ? nullptr : &ts, nullptr);
    uint64_t v;
    [[maybe_unused]] ssize_t r = ::read(fd_, &v, sizeof v);
  }

  void unpark() override {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(fd_, &one, sizeof one);
  }

 private:
  int fd_;
};

}  // namespace

std::unique_ptr<Driver> make_basic_driver() {
  return std::make_unique<BasicDriver>();
}

}  // namespace weft::rt
