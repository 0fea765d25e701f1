// Tests server/static_handler: the Reply each request gets, without a socket: methods,
// target errors, files, the trailing-slash rule, directory redirects (with the query kept
// and the path encoded), index files, listings on and off, preconditions and ranges (one,
// several as multipart, limits.max_ranges) and precompressed variants (Accept-Encoding
// weights, tags, Vary, "always", "off"). Runs the handler on a fiber (the fd cache's
// lookups need one) over a real document root.
#include "server/handler/static_handler.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "runtime/io_driver.hpp"
#include "runtime/scheduler.hpp"
#include "server/files/fd_cache.hpp"
#include "server/handler/connection_work.hpp"
#include "server/http/multipart.hpp"
#include "server/net/server_context.hpp"

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
      check(handle_static(ctx.site_for(work.parser.request()), work.parser.request(), work, "test"),
            work);
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
    EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
    EXPECT_EQ(r.extra, "Vary: Accept\r\n");
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
           EXPECT_NE(r.file->fields.validators().find("ETag: "), std::string_view::npos);
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
           EXPECT_NE(r.file->fields.text.find("Accept-Ranges: none\r\n"), std::string::npos);
         });
}

class PrecompressedTest : public StaticHandlerTest {
 protected:
  void SetUp() override {
    StaticHandlerTest::SetUp();
    std::ofstream(root_ / "hello.txt.gz") << "GZIP-BYTES";
    std::ofstream(root_ / "hello.txt.br") << "BROTLI-BYTE!";  // 12 bytes, as hello.txt
    std::ofstream(root_ / "dir" / "index.html.gz") << "GZ-INDEX";
    std::ofstream(root_ / "lone.txt.gz") << "NO ORIGINAL";
    fs::create_directories(root_ / "dirvariant.txt.gz");
    std::ofstream(root_ / "dirvariant.txt") << "plain";
    // The br variant and the file share size and mtime: only the suffix tells their tags apart.
    const auto t = fs::last_write_time(root_ / "hello.txt");
    fs::last_write_time(root_ / "hello.txt.br", t);
    config_.precompressed = Precompressed::on;
  }

  // The reply to GET `target` with `fields` ("Name: value\r\n" lines).
  void get(std::string_view target, std::string_view fields,
           const std::function<void(const Reply&, ConnectionWork&)>& check) {
    answer("GET " + std::string(target) + " HTTP/1.1\r\nHost: x\r\n" + std::string(fields) + "\r\n",
           check);
  }

  // The path of the file GET `target` with Accept-Encoding `ae` (none when null) serves.
  std::string served(std::string_view target, const char* ae) {
    std::string path;
    get(target, ae ? "Accept-Encoding: " + std::string(ae) + "\r\n" : "",
        [&](const Reply& r, ConnectionWork&) {
          EXPECT_TRUE(r.vary);
          if (r.file) path = r.file->path;
        });
    return path;
  }
};

TEST_F(PrecompressedTest, TheAcceptedVariantOfHigherWeightIsServed) {
  EXPECT_EQ(served("/hello.txt", "gzip"), "/hello.txt.gz");
  EXPECT_EQ(served("/hello.txt", "gzip, br"), "/hello.txt.br");  // a tie: br
  EXPECT_EQ(served("/hello.txt", "br;q=0.5, gzip"), "/hello.txt.gz");
  EXPECT_EQ(served("/hello.txt", "br, gzip;q=0"), "/hello.txt.br");
  EXPECT_EQ(served("/hello.txt", "*"), "/hello.txt.br");
  EXPECT_EQ(served("/hello.txt", nullptr), "/hello.txt");  // identity, still with Vary
  EXPECT_EQ(served("/hello.txt", "identity"), "/hello.txt");
  EXPECT_EQ(served("/hello.txt", "gzip;q=0"), "/hello.txt");
  EXPECT_EQ(served("/dir/", "br, gzip;q=0.5"), "/dir/index.html.gz");  // no .br: the next
  EXPECT_EQ(served("/dirvariant.txt", "gzip"), "/dirvariant.txt");     // a directory is no variant
  EXPECT_EQ(served("/hello.txt.gz", "gzip"), "/hello.txt.gz");         // the variant as a file
  EXPECT_EQ(status_of("GET /lone.txt HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n"),
            404);  // no variant without its original
}

TEST_F(PrecompressedTest, AVariantHasTheOriginalsTypeItsCodingAndItsOwnTag) {
  std::string identity_tag;
  get("/hello.txt", "", [&](const Reply& r, ConnectionWork&) {
    EXPECT_TRUE(r.encoding.empty());
    EXPECT_TRUE(r.validators.empty());
    identity_tag = std::string(r.file->etag.view());
  });
  get("/hello.txt", "Accept-Encoding: br\r\n", [&](const Reply& r, ConnectionWork&) {
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.encoding, "br");
    EXPECT_EQ(r.content_type, "text/plain");
    EXPECT_EQ(r.length, 12u);
    EXPECT_EQ(r.file->etag.view(), identity_tag);  // same size and mtime: the same file tag
    const std::string want = "ETag: " + identity_tag.substr(0, identity_tag.size() - 1) + "-br\"";
    EXPECT_NE(r.validators.find(want + "\r\n"), std::string_view::npos) << r.validators;
  });
}

TEST_F(PrecompressedTest, PreconditionsAndRangesApplyToTheVariant) {
  std::string gz_tag;
  get("/hello.txt", "Accept-Encoding: gzip\r\n", [&](const Reply& r, ConnectionWork&) {
    const std::string_view v = r.validators;  // [Last-Modified line] "ETag: " tag CRLF
    gz_tag = std::string(v.substr(v.find("ETag: ") + 6, v.size() - v.find("ETag: ") - 8));
  });
  ASSERT_TRUE(gz_tag.ends_with("-gz\"")) << gz_tag;
  get("/hello.txt", "Accept-Encoding: gzip\r\nIf-None-Match: " + gz_tag + "\r\n",
      [&](const Reply& r, ConnectionWork&) {
        EXPECT_EQ(r.status, 304);
        EXPECT_TRUE(r.vary);
        EXPECT_NE(r.validators.find(gz_tag), std::string_view::npos);
      });
  // The variant's tag does not match the identity file: 200 with it.
  get("/hello.txt", "If-None-Match: " + gz_tag + "\r\n",
      [&](const Reply& r, ConnectionWork&) { EXPECT_EQ(r.status, 200); });
  get("/hello.txt", "Accept-Encoding: gzip\r\nIf-Match: \"other\"\r\n",
      [&](const Reply& r, ConnectionWork&) {
        EXPECT_EQ(r.status, 412);
        EXPECT_EQ(r.extra, kVaryLine);
      });
  get("/hello.txt", "Accept-Encoding: gzip\r\nRange: bytes=2-5\r\nIf-Range: " + gz_tag + "\r\n",
      [&](const Reply& r, ConnectionWork&) {
        EXPECT_EQ(r.status, 206);
        EXPECT_EQ(r.offset, 2u);
        EXPECT_EQ(r.length, 4u);
        EXPECT_EQ(r.file->path, "/hello.txt.gz");
      });
  get("/hello.txt", "Accept-Encoding: gzip\r\nRange: bytes=10-\r\n",
      [&](const Reply& r, ConnectionWork&) {
        EXPECT_EQ(r.status, 416);
        EXPECT_EQ(r.extra, "Content-Range: bytes */10\r\nVary: Accept-Encoding\r\n");
      });
  get("/hello.txt", "Accept-Encoding: gzip\r\nRange: bytes=0-0,5-5\r\n",
      [&](const Reply& r, ConnectionWork&) {
        EXPECT_EQ(r.status, 200);  // no multipart of an encoded variant
        EXPECT_EQ(r.length, 10u);
        EXPECT_EQ(r.encoding, "gzip");
      });
}

TEST_F(PrecompressedTest, AlwaysServesGzipUnasked) {
  config_.precompressed = Precompressed::always;
  EXPECT_EQ(served("/hello.txt", nullptr), "/hello.txt.gz");
  EXPECT_EQ(served("/hello.txt", "identity"), "/hello.txt.gz");
  // An explicit q=0 is a refusal (RFC 9110 §12.5.3), unlike a coding left out.
  EXPECT_EQ(served("/hello.txt", "gzip;q=0"), "/hello.txt");
  EXPECT_EQ(served("/hello.txt", "*;q=0"), "/hello.txt");
  EXPECT_EQ(served("/hello.txt", "br;q=0.1"), "/hello.txt.br");
  EXPECT_EQ(served("/dirvariant.txt", nullptr), "/dirvariant.txt");
}

TEST_F(PrecompressedTest, OffLooksForNothing) {
  config_.precompressed = Precompressed::off;
  get("/hello.txt", "Accept-Encoding: gzip, br\r\n", [](const Reply& r, ConnectionWork&) {
    EXPECT_EQ(r.file->path, "/hello.txt");
    EXPECT_FALSE(r.vary);
    EXPECT_TRUE(r.encoding.empty());
  });
}

}  // namespace
}  // namespace weft::http
