// Error-log setup: one spdlog logger ("weft") used by every part of the server.
//
// The error log goes to stderr by default, or stdout, or a file (reopened on SIGHUP so
// logrotate works). Setup happens once in main before any processor starts.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include <spdlog/details/file_helper.h>
#include <spdlog/sinks/base_sink.h>

#include "server/core/config.hpp"

namespace weft::http {

/// A file sink that can be reopened under the same name (spdlog 1.10's basic_file_sink
/// cannot), so that SIGHUP after logrotate's rename starts a fresh file.
class ReopenableFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  /// Opens (appending) `path`; throws spdlog::spdlog_ex when it cannot.
  explicit ReopenableFileSink(const std::string& path);

  /// Opens the file by name again and switches to it; returns false (and keeps logging to
  /// the old file) when the open fails.
  bool reopen();

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;

 private:
  std::string path_;
  // A pointer, so that reopen() can open the new file before letting go of the old one
  // (file_helper can be neither moved nor reopened without closing first).
  std::unique_ptr<spdlog::details::file_helper> file_;
};

/// Makes the "weft" logger from config (sink, level) the spdlog default; throws ConfigError
/// when the log file cannot be opened.
void setup_logging(const Config& config);

/// Reopens the error log file (no-op for stderr/stdout); safe to call from any thread.
void reopen_error_log();

}  // namespace weft::http
