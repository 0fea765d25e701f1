#include "server/ops/log.hpp"

#include <memory>
#include <mutex>

#include <fmt/core.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace weft::http {
namespace {

std::mutex g_reopen_mutex;
std::shared_ptr<ReopenableFileSink> g_file_sink;

}  // namespace

ReopenableFileSink::ReopenableFileSink(const std::string& path)
    : path_(path), file_(std::make_unique<spdlog::details::file_helper>()) {
  file_->open(path_, false);
}

bool ReopenableFileSink::reopen() {
  // Open outside the lock: a failing open retries for about 50 ms, and writers go on
  // meanwhile. Closing the old file before a successful open would leave the sink with no
  // file at all (file_helper then writes through a null FILE*).
  auto fresh = std::make_unique<spdlog::details::file_helper>();
  try {
    fresh->open(path_, false);
  } catch (const spdlog::spdlog_ex&) {
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    file_.swap(fresh);
  }
  return true;  // `fresh` now holds the old file: closed here, its buffer flushed to it
}

void ReopenableFileSink::sink_it_(const spdlog::details::log_msg& msg) {
  spdlog::memory_buf_t formatted;
  formatter_->format(msg, formatted);
  file_->write(formatted);
}

void ReopenableFileSink::flush_() {
  file_->flush();
}

void setup_logging(const Config& config) {
  spdlog::sink_ptr sink;
  if (config.error_log == "stderr" || config.error_log.empty()) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else if (config.error_log == "stdout") {
    sink = std::make_shared<spdlog::sinks::stdout_sink_mt>();
  } else {
    try {
      auto file = std::make_shared<ReopenableFileSink>(config.error_log);
      std::lock_guard lock(g_reopen_mutex);
      g_file_sink = file;
      sink = file;
    } catch (const spdlog::spdlog_ex& e) {
      throw ConfigError(
          fmt::format("{}: key 'log.error_log': {}", config.source.string(), e.what()));
    }
  }
  auto logger = std::make_shared<spdlog::logger>("weft", std::move(sink));
  logger->set_pattern("%Y/%m/%d %H:%M:%S.%e [%l] %v");
  logger->set_level(spdlog::level::from_str(config.log_level));
  logger->flush_on(spdlog::level::warn);
  // Lower levels reach a log file within a second rather than at exit.
  spdlog::flush_every(std::chrono::seconds(1));
  spdlog::set_default_logger(std::move(logger));
}

void reopen_error_log() {
  std::lock_guard lock(g_reopen_mutex);
  if (!g_file_sink) return;
  if (!g_file_sink->reopen())
    spdlog::error("cannot reopen the error log; still writing the old file");
}

}  // namespace weft::http
