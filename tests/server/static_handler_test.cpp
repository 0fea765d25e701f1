// Tests server/static_handler: the Reply each request gets, without a socket: methods,
// target errors, files, the trailing-slash rule, directory redirects (with the query kept
// and the path encoded), index files, listings on and off, preconditions and ranges (one,
// several as multipart, limits.max_ranges). Runs the handler on a fiber (the fd cache's
// lookups need one) over a real document root.
#include "server/static_handler.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "runtime/io_driver.hpp"
#include "runtime/scheduler.hpp"
#include "server/fd_cache.hpp"
#include "server/multipart.hpp"

#include "tests/server/temp_dir.hpp"

namespace weft::http {
namespace {

namespace fs = std::filesystem;

class StaticHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = make_test_dir("handler");
    fs::create_directories(root_ / "dir");
    fs::create_directories(root_ / "bare");
    fs::create_directories(root_ / "a b");
    std::ofstream(root_ / "hello.txt") << "hello world\n";
    std::ofstream(root_ / "dir" / "index.html") << "<h1>dir</h1>\n";
    std::ofstream(root_ / "bare" / "x.txt") << "x";
    config_.root = root_;
  }
  void TearDown() override { fs::remove_all(root_); }

  // Parses `raw` (one request head) and runs `check(reply, work)` with its Reply.
  void answer(std::string_view raw,
              const std::function<void(const Reply&, ConnectionWork&)>& check) {
    rt::RuntimeOptions o;
    o.processors = 1;
    o.make_driver = rt::make_io_driver_factory(rt::IoOptions{});
    rt::Runtime runtime(o);
    ServerContext ctx(config_);
    ctx.root_fd = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ctx.files = std::make_unique<FdCache>(config_, ctx.root_fd, ctx.mime, nullptr, 100);
    ConnectionWork work(config_, 16 * 1024);
    runtime.run([&] {
      ParseResult r = work.parser.parse({raw.data(), raw.size()});
      ASSERT_EQ(r.status, ParseStatus::ready) << raw;
      check(handle_static(ctx, work.parser.request(), work, "test"), work);
    });
  }

  // The status alone.
  int status_of(std::string_view raw) {
    int status = 0;
    answer(raw, [&](const Reply& r, ConnectionWork&) { status = r.status; });
    return status;
  }

  fs::path root_;
  Config config_;
};

TEST_F(StaticHandlerTest, AFile) {
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n", [](const Reply& r, ConnectionWork&) {
    EXPECT_EQ(r.kind, Reply::Kind::file);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.offset, 0u);
    EXPECT_EQ(r.length, 12u);
    ASSERT_TRUE(r.file);
    EXPECT_EQ(r.file->path, "/hello.txt");
  });
}

TEST_F(StaticHandlerTest, MethodsOtherThanGetAndHead) {
  answer("OPTIONS /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n",
         [](const Reply& r, ConnectionWork&) { EXPECT_EQ(r.kind, Reply::Kind::options); });
  answer("DELETE /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n", [](const Reply& r, ConnectionWork&) {
    EXPECT_EQ(r.status, 405);
    EXPECT_EQ(r.extra, "Allow: GET, HEAD, OPTIONS\r\n");
  });
}

TEST_F(StaticHandlerTest, TargetErrors) {
  EXPECT_EQ(status_of("GET /../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"), 404);
  EXPECT_EQ(status_of("GET /hello.txt/ HTTP/1.1\r\nHost: x\r\n\r\n"), 404);  // ENOTDIR
}

TEST_F(StaticHandlerTest, ADirectoryWithoutItsSlashIsRedirected) {
  answer("GET /a%20b?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", [](const Reply& r, ConnectionWork&) {
    EXPECT_EQ(r.status, 301);
    EXPECT_EQ(r.extra, "Location: /a%20b/?q=1\r\n");
  });
}

TEST_F(StaticHandlerTest, ARedirectTooLongForTheHeadIs414) {
  std::string query(1800, 'q');
  EXPECT_EQ(status_of("GET /dir?" + query + " HTTP/1.1\r\nHost: x\r\n\r\n"), 414);
  std::string fits(1200, 'q');
  answer("GET /dir?" + fits + " HTTP/1.1\r\nHost: x\r\n\r\n", [](const Reply& r, ConnectionWork&) {
    EXPECT_EQ(r.status, 301);
    EXPECT_EQ(r.extra.size(), std::string_view("Location: /dir/?\r\n").size() + 1200);
  });
}

TEST_F(StaticHandlerTest, IndexFileOrListing) {
  answer("GET /dir/ HTTP/1.1\r\nHost: x\r\n\r\n", [](const Reply& r, ConnectionWork&) {
    EXPECT_EQ(r.kind, Reply::Kind::file);
    EXPECT_EQ(r.file->path, "/dir/index.html");
  });
  EXPECT_EQ(status_of("GET /bare/ HTTP/1.1\r\nHost: x\r\n\r\n"), 403);  // listings off
  config_.directory_listing = true;
  answer("GET /bare/ HTTP/1.1\r\nHost: x\r\n\r\n", [](const Reply& r, ConnectionWork& w) {
    EXPECT_EQ(r.kind, Reply::Kind::page);
    EXPECT_EQ(r.content_type, "text/html");
    EXPECT_NE(w.body.find("href=\"./x.txt\""), std::string::npos) << w.body;
  });
}

TEST_F(StaticHandlerTest, PreconditionsAndRanges) {
  std::string etag;
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n",
         [&](const Reply& r, ConnectionWork&) { etag = std::string(r.file->etag.view()); });
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: " + etag + "\r\n\r\n",
         [](const Reply& r, ConnectionWork&) {
           EXPECT_EQ(r.kind, Reply::Kind::not_modified);
           EXPECT_EQ(r.status, 304);
           EXPECT_NE(r.file->validator_fields().find("ETag: "), std::string_view::npos);
         });
  EXPECT_EQ(status_of("GET /hello.txt HTTP/1.1\r\nHost: x\r\nIf-Match: \"other\"\r\n\r\n"), 412);
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=6-\r\n\r\n",
         [](const Reply& r, ConnectionWork&) {
           EXPECT_EQ(r.status, 206);
           EXPECT_EQ(r.offset, 6u);
           EXPECT_EQ(r.length, 6u);
         });
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=100-\r\n\r\n",
         [](const Reply& r, ConnectionWork&) {
           EXPECT_EQ(r.status, 416);
           EXPECT_EQ(r.extra, "Content-Range: bytes */12\r\n");
         });
}

TEST_F(StaticHandlerTest, SeveralRangesGetAMultipartBody) {
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=6-7,0-1\r\n\r\n",
         [](const Reply& r, ConnectionWork& w) {
           EXPECT_EQ(r.kind, Reply::Kind::file);
           EXPECT_EQ(r.status, 206);
           ASSERT_EQ(r.range.kind, RangeResult::Kind::multi);
           ASSERT_EQ(r.range.parts.size(), 2u);
           EXPECT_EQ(r.range.parts[0].offset, 0u);  // sorted
           EXPECT_EQ(r.range.parts[1].offset, 6u);
           EXPECT_EQ(r.boundary.data(), w.boundary.data());
           EXPECT_EQ(r.boundary.size(), kBoundaryLength);
           EXPECT_EQ(r.length, multipart_length(r.boundary, "text/plain", r.range.parts, 12));
         });
  // A failed If-Range: the whole file, as for one range.
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1,6-7\r\nIf-Range: \"x\"\r\n\r\n",
         [](const Reply& r, ConnectionWork&) {
           EXPECT_EQ(r.status, 200);
           EXPECT_EQ(r.length, 12u);
           EXPECT_TRUE(r.boundary.empty());
         });
  // Ranges that add up to the file: the whole file.
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=0-5,0-5,8-9\r\n\r\n",
         [](const Reply& r, ConnectionWork&) {
           EXPECT_EQ(r.status, 200);
           EXPECT_TRUE(r.boundary.empty());
         });
}

TEST_F(StaticHandlerTest, MaxRangesLimitsTheRanges) {
  config_.max_ranges = 1;
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1,6-7\r\n\r\n",
         [](const Reply& r, ConnectionWork&) {
           EXPECT_EQ(r.status, 200);
           EXPECT_EQ(r.length, 12u);
         });
  EXPECT_EQ(status_of("GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=6-\r\n\r\n"), 206);
  config_.max_ranges = 0;  // no ranges at all: not even a 416, and Accept-Ranges says none
  answer("GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=100-\r\n\r\n",
         [](const Reply& r, ConnectionWork&) {
           EXPECT_EQ(r.status, 200);
           EXPECT_NE(r.file->headers.find("Accept-Ranges: none\r\n"), std::string::npos);
         });
}

}  // namespace
}  // namespace weft::http
