#include "bench/io_window.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace weft::bench {
namespace {

double seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool write_byte(int fd, char c) {
  while (true) {
    ssize_t n = ::write(fd, &c, 1);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// Spawns argv with stdin, stdout and stderr on /dev/null and `dups` (from -> to) applied;
// returns the pid or -1.
int spawn(const std::vector<std::string>& args, const std::vector<std::pair<int, int>>& dups) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd : {0, 1, 2}) {
    posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  for (auto [from, to] : dups) posix_spawn_file_actions_adddup2(&fa, from, to);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Stops a counting tool with SIGINT (both print their totals then) and reaps it.
void interrupt_and_reap(int& pid) {
  if (pid <= 0) return;
  kill(pid, SIGINT);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  pid = -1;
}

// Returns whether every thread of this process shows `tracer` as its TracerPid.
bool all_threads_traced_by(int tracer) {
  DIR* d = opendir("/proc/self/task");
  if (!d) return false;
  bool all = true;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream status(std::string("/proc/self/task/") + e->d_name + "/status");
    std::string line;
    int pid = 0;
    while (std::getline(status, line)) {
      if (line.rfind("TracerPid:", 0) == 0) {
        pid = std::atoi(line.c_str() + 10);
        break;
      }
    }
    if (pid != tracer) all = false;
  }
  closedir(d);
  return all;
}

std::string temp_path(const char* what) {
  return "/tmp/io_bench_" + std::string(what) + "_" + std::to_string(getpid()) + ".txt";
}

}  // namespace

bool WindowPipes::open() {
  return pipe2(ctl, O_CLOEXEC) == 0 && pipe2(reply, O_CLOEXEC) == 0;
}

void WindowPipes::close_all() {
  for (int* fd : {&ctl[0], &ctl[1], &reply[0], &reply[1]}) close_fd(*fd);
}

void WindowPipes::keep_server_ends() {
  close_fd(ctl[1]);
  close_fd(reply[0]);
}

void WindowPipes::keep_client_ends() {
  close_fd(ctl[0]);
  close_fd(reply[1]);
}

bool window_mark(const WindowPipes& p, char mark, const std::function<bool(int fd)>& wait_reply) {
  return write_byte(p.ctl[1], mark) && wait_reply(p.reply[0]);
}

WindowSampler::WindowSampler(const WindowPipes& pipes, SyscallCounter counter,
                             std::function<rt::IoStats()> io_stats)
    : ctl_fd_(pipes.ctl[0]),
      reply_fd_(pipes.reply[1]),
      counter_(counter),
      io_stats_(std::move(io_stats)) {}

WindowSampler::~WindowSampler() {
  if (thread_.joinable()) thread_.join();
  interrupt_and_reap(tool_pid_);
  close_fd(perf_ctl_);
  close_fd(perf_ack_);
}

void WindowSampler::start() {
  if (counter_ == SyscallCounter::perf && !perf_start()) counter_ = SyscallCounter::none;
  thread_ = std::thread([this] { loop(); });
}

WindowSampler::Snapshot WindowSampler::take() const {
  Snapshot s;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.cpu_s = seconds(ru.ru_utime) + seconds(ru.ru_stime);
  s.sys_s = seconds(ru.ru_stime);
  if (io_stats_) s.io = io_stats_();
  return s;
}

void WindowSampler::loop() {
  char c;
  while (true) {
    ssize_t n = ::read(ctl_fd_, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) break;  // the client is done
    if (c == 'S') {
      if (counter_ == SyscallCounter::perf && !perf_command("enable")) {
        counter_ = SyscallCounter::none;
      }
      if (counter_ == SyscallCounter::strace && !strace_start()) counter_ = SyscallCounter::none;
      begin_ = take();
      have_begin_ = true;
    } else if (c == 'E') {
      end_ = take();
      have_end_ = true;
      if (counter_ == SyscallCounter::perf) perf_command("disable");
      if (counter_ == SyscallCounter::strace) strace_stop(counted_);
    }
    if (!write_byte(reply_fd_, 'k')) break;
  }
}

void WindowSampler::finish(Figures& out) {
  if (thread_.joinable()) thread_.join();
  if (counter_ == SyscallCounter::perf) perf_stop(counted_);
  if (!have_begin_ || !have_end_) return;
  out.set("srv_cpu_s", end_.cpu_s - begin_.cpu_s);
  out.set("srv_sys_s", end_.sys_s - begin_.sys_s);
  if (io_stats_) {
    out.set("enters", static_cast<double>(end_.io.enters - begin_.io.enters));
    out.set("operations", static_cast<double>(end_.io.operations - begin_.io.operations));
    out.set("completions", static_cast<double>(end_.io.completions - begin_.io.completions));
  }
  for (const auto& [name, value] : counted_.all()) out.set(name, value);
}

bool WindowSampler::perf_start() {
  int ctl[2], ack[2];
  if (pipe2(ctl, O_CLOEXEC) != 0) return false;
  if (pipe2(ack, O_CLOEXEC) != 0) {
    ::close(ctl[0]);
    ::close(ctl[1]);
    return false;
  }
  // perf sees the pipes as fds 900 (commands) and 901 (acknowledgements).
  out_path_ = temp_path("perf");
  tool_pid_ =
      spawn({"perf", "stat", "-x", ",", "-o", out_path_, "-D", "-1", "--control=fd:900,901", "-e",
             "raw_syscalls:sys_enter,syscalls:sys_enter_io_uring_enter,"
             "syscalls:sys_enter_epoll_pwait2",
             "-p", std::to_string(getpid())},
            {{ctl[0], 900}, {ack[1], 901}});
  ::close(ctl[0]);
  ::close(ack[1]);
  perf_ctl_ = ctl[1];
  perf_ack_ = ack[0];
  if (tool_pid_ < 0) {
    close_fd(perf_ctl_);
    close_fd(perf_ack_);
    return false;
  }
  return true;
}

// Sends a control command and waits (at most 10 s) for perf's "ack".
bool WindowSampler::perf_command(const char* cmd) {
  std::string line = std::string(cmd) + "\n";
  if (::write(perf_ctl_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return false;
  }
  std::string got;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got.find("ack") == std::string::npos) {
    pollfd p{perf_ack_, POLLIN, 0};
    if (std::chrono::steady_clock::now() > deadline) return false;
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[64];
    ssize_t n = ::read(perf_ack_, buf, sizeof buf);
    if (n <= 0) return false;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

void WindowSampler::perf_stop(Figures& out) {
  interrupt_and_reap(tool_pid_);
  std::ifstream in(out_path_);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    if (f.size() < 3 || f[0].empty() || f[0][0] == '<') continue;  // "<not counted>"
    double v = std::strtod(f[0].c_str(), nullptr);
    if (f[2] == "raw_syscalls:sys_enter") out.set("perf_syscalls", v);
    if (f[2] == "syscalls:sys_enter_io_uring_enter") out.set("perf_uring_enters", v);
    if (f[2] == "syscalls:sys_enter_epoll_pwait2") out.set("perf_epoll_waits", v);
  }
  std::remove(out_path_.c_str());
}

bool WindowSampler::strace_start() {
  out_path_ = temp_path("strace");
  tool_pid_ = spawn({"strace", "-c", "-f", "-e", "trace=io_uring_enter", "-o", out_path_, "-p",
                     std::to_string(getpid())},
                    {});
  if (tool_pid_ < 0) return false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!all_threads_traced_by(tool_pid_)) {
    if (std::chrono::steady_clock::now() > deadline) {
      interrupt_and_reap(tool_pid_);
      return false;
    }
    usleep(1000);
  }
  return true;
}

void WindowSampler::strace_stop(Figures& out) {
  interrupt_and_reap(tool_pid_);
  // strace -c: "% time  seconds  usecs/call  calls  [errors]  syscall"
  std::ifstream in(out_path_);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string w; ss >> w;) f.push_back(w);
    if (f.size() >= 5 && f.back() == "io_uring_enter") {
      out.set("strace_uring_enters", std::strtod(f[3].c_str(), nullptr));
    }
  }
  std::remove(out_path_.c_str());
}

}  // namespace weft::bench
