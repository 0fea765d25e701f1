// A fresh, empty directory per test under the system's temporary directory, named after the
// test (so parallel test processes never share one); the caller removes it.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

namespace weft::http {

/// Returns the path of an empty directory "weft-PREFIX-PID-TEST" made for the running test.
inline std::filesystem::path make_test_dir(const std::string& prefix) {
  auto dir = std::filesystem::temp_directory_path() /
             ("weft-" + prefix + "-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace weft::http
