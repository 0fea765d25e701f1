// Tests server/http/status.cpp: reason phrases, status lines, error pages, and errno → status.
#include "server/http/status.hpp"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

TEST(Status, ReasonPhrases) {
  const std::pair<int, const char*> cases[] = {
      {200, "OK"},
      {206, "Partial Content"},
      {301, "Moved Permanently"},
      {302, "Found"},
      {303, "See Other"},
      {304, "Not Modified"},
      {307, "Temporary Redirect"},
      {308, "Permanent Redirect"},
      {400, "Bad Request"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {406, "Not Acceptable"},
      {408, "Request Timeout"},
      {412, "Precondition Failed"},
      {413, "Content Too Large"},
      {414, "URI Too Long"},
      {416, "Range Not Satisfiable"},
      {431, "Request Header Fields Too Large"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {503, "Service Unavailable"},
      {505, "HTTP Version Not Supported"},
  };
  ASSERT_EQ(known_statuses().size(), std::size(cases));
  for (const auto& [code, reason] : cases) EXPECT_EQ(reason_phrase(code), reason) << code;
  EXPECT_EQ(reason_phrase(418), "");
  EXPECT_EQ(reason_phrase(0), "");
}

TEST(Status, StatusLines) {
  EXPECT_EQ(status_line(200), "HTTP/1.1 200 OK\r\n");
  EXPECT_EQ(status_line(404), "HTTP/1.1 404 Not Found\r\n");
  EXPECT_EQ(status_line(999), "");
  // Built once: the same bytes every time.
  EXPECT_EQ(status_line(206).data(), status_line(206).data());
}

TEST(Status, ErrorBodies) {
  for (int code : known_statuses()) {
    const std::string_view body = error_body(code);
    if (code < 300 || code == 304) {
      EXPECT_EQ(body, "") << code;
      continue;
    }
    const std::string title = std::to_string(code) + " " + std::string(reason_phrase(code));
    EXPECT_NE(body.find("<title>" + title + "</title>"), std::string_view::npos) << body;
    EXPECT_NE(body.find("<h1>" + title + "</h1>"), std::string_view::npos) << body;
    EXPECT_LT(body.size(), 512u);
    EXPECT_EQ(error_body(code).data(), body.data());  // prebuilt
  }
  EXPECT_EQ(error_body(418), "");
}

TEST(Status, ErrnoMapping) {
  using spdlog::level::level_enum;
  struct Row {
    int err;
    int status;
    level_enum level;
  };
  const Row rows[] = {
      {ENOENT, 404, level_enum::debug},       {ENOTDIR, 404, level_enum::debug},
      {ENAMETOOLONG, 404, level_enum::debug}, {ELOOP, 404, level_enum::info},
      {EXDEV, 404, level_enum::info},         {EACCES, 403, level_enum::warn},
      {EPERM, 403, level_enum::warn},         {EMFILE, 503, level_enum::err},
      {ENFILE, 503, level_enum::err},         {EIO, 500, level_enum::critical},
      {ENOMEM, 500, level_enum::critical},    {EINVAL, 500, level_enum::critical},
      {0, 500, level_enum::critical},
  };
  for (const Row& r : rows) {
    const ErrnoStatus s = status_from_errno(r.err);
    EXPECT_EQ(s.status, r.status) << r.err;
    EXPECT_EQ(s.level, r.level) << r.err;
    EXPECT_FALSE(reason_phrase(s.status).empty());
  }
}

}  // namespace
}  // namespace weft::http
