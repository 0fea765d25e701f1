#include "bench/child.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

namespace weft::bench {
namespace {

double seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6;
}

// Resets the peak RSS (VmHWM) to the current RSS; Linux >= 4.0.
void reset_peak_rss() {
  int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  [[maybe_unused]] ssize_t n = write(fd, "5", 1);
  close(fd);
}

// Returns VmHWM from /proc/self/status in KiB, or -1.
double read_peak_rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  double kib = -1;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) {
      kib = std::strtod(line + 6, nullptr);
      break;
    }
  }
  std::fclose(f);
  return kib;
}

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

[[noreturn]] void child_main(int fd, const ChildOptions& opts,
                             const std::function<void(Figures&)>& measure) {
  if (opts.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(opts.cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
  }
  alarm(opts.timeout_s);
  Figures figures;
  reset_peak_rss();
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  auto t0 = std::chrono::steady_clock::now();
  measure(figures);
  auto t1 = std::chrono::steady_clock::now();
  getrusage(RUSAGE_SELF, &after);
  double hwm = read_peak_rss_kib();
  if (hwm < 0) hwm = static_cast<double>(after.ru_maxrss);

  std::ostringstream out;
  out.precision(17);
  for (const auto& [name, value] : figures.all()) out << "f " << name << ' ' << value << '\n';
  out << "rss " << hwm << '\n';
  out << "minflt " << static_cast<double>(after.ru_minflt - before.ru_minflt) << '\n';
  out << "majflt " << static_cast<double>(after.ru_majflt - before.ru_majflt) << '\n';
  out << "cpu "
      << (seconds(after.ru_utime) + seconds(after.ru_stime) - seconds(before.ru_utime) -
          seconds(before.ru_stime))
      << '\n';
  out << "sys " << seconds(after.ru_stime) - seconds(before.ru_stime) << '\n';
  out << "wall " << std::chrono::duration<double>(t1 - t0).count() << '\n';
  write_all(fd, out.str());
  close(fd);
  _exit(0);
}

}  // namespace

void Figures::set(const std::string& name, double value) {
  for (auto& [n, v] : values_) {
    if (n == name) {
      v = value;
      return;
    }
  }
  values_.emplace_back(name, value);
}

std::optional<double> Figures::get(const std::string& name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return v;
  }
  return std::nullopt;
}

ChildProcess start_child(const ChildOptions& opts, const std::function<void(Figures&)>& measure) {
  ChildProcess child;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    child.error = std::string("pipe: ") + std::strerror(errno);
    return child;
  }
  std::fflush(nullptr);  // or the child's exit path could repeat buffered output
  pid_t pid = fork();
  if (pid < 0) {
    child.error = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return child;
  }
  if (pid == 0) {
    close(fds[0]);
    child_main(fds[1], opts, measure);
  }
  close(fds[1]);
  child.pid = pid;
  child.fd = fds[0];
  return child;
}

ChildResult wait_child(ChildProcess& child) {
  ChildResult result;
  if (child.pid < 0) {
    result.error = child.error.empty() ? "not started" : child.error;
    return result;
  }
  std::string text;
  char buf[4096];
  while (true) {
    ssize_t n = read(child.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(child.fd);
  child.fd = -1;
  int status = 0;
  rusage ru{};
  while (wait4(child.pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  child.pid = -1;
  if (WIFSIGNALED(status)) {
    result.error = WTERMSIG(status) == SIGALRM
                       ? "timeout"
                       : "killed by signal " + std::to_string(WTERMSIG(status));
    return result;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    result.error = "exit status " + std::to_string(WEXITSTATUS(status));
    return result;
  }
  std::istringstream in(text);
  std::string key;
  while (in >> key) {
    if (key == "f") {
      std::string name;
      double v = 0;
      in >> name >> v;
      result.figures.set(name, v);
    } else {
      double v = 0;
      in >> v;
      if (key == "rss") result.peak_rss_kib = v;
      if (key == "minflt") result.minflt = v;
      if (key == "majflt") result.majflt = v;
      if (key == "cpu") result.cpu_s = v;
      if (key == "sys") result.sys_s = v;
      if (key == "wall") result.wall_s = v;
    }
  }
  result.ok = true;
  return result;
}

void kill_child(const ChildProcess& child) {
  if (child.pid > 0) kill(child.pid, SIGKILL);
}

ChildResult run_in_child(const ChildOptions& opts, const std::function<void(Figures&)>& measure) {
  ChildProcess child = start_child(opts, measure);
  return wait_child(child);
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i) {
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
    }
  }
  return cpus;
}

}  // namespace weft::bench
