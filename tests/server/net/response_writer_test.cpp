// Tests server/response_writer over a real socket pair: heads built per Reply kind, pipelined
// responses queued and sent in one go and finished in order with their body bytes, HEAD
// without a body, a body streamed with sendfile, multipart/byteranges bodies (from memory and
// from the descriptor), a peer that is gone (finished unsent, the writer broken), abandon()
// finishing what is still queued, and io.body = "auto" asking about residency piece by piece
// and holding no read buffer while a slow client does not read.
#include "server/net/response_writer.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/io_driver.hpp"
#include "runtime/scheduler.hpp"
#include "server/files/page_cache.hpp"
#include "server/handler/response_head.hpp"
#include "server/http/multipart.hpp"
#include "server/http/status.hpp"
#include "server/ops/metrics.hpp"

namespace weft::http {
namespace {

struct Finished {
  int status;
  uint64_t body_sent;
};

class ResponseWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
    ::fcntl(fds_[0], F_SETFL, O_NONBLOCK);
  }
  void TearDown() override {
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }

  // Runs fn(writer) on a fiber, with a reader thread collecting what the peer receives
  // until the writer's side closes (`read`, when given, reads instead); returns it.
  std::string run(const std::function<void(ResponseWriter&, ConnectionWork&)>& fn,
                  const std::function<void(std::string&)>& read = {}) {
    std::string got;
    std::thread reader([&] {
      if (read) {
        read(got);
      } else {
        read_until(got, std::string::npos);
      }
    });
    rt::RuntimeOptions o;
    o.processors = 1;
    o.make_driver = rt::make_io_driver_factory(rt::IoOptions{});
    rt::Runtime runtime(o);
    ServerContext ctx(config_);
    ctx.metrics = metrics_;
    ctx.pools.push_back(std::make_unique<ResourcePool>(config_, 4096, 65536));
    ctx_ = &ctx;
    ConnectionWork work(config_, 4096);
    runtime.run([&] {
      Recorder recorder(finished_);
      ResponseWriter w(ctx, fds_[0], "peer", token_, recorder);
      w.attach(&work);
      fn(w, work);
      w.abandon();
    });
    ::shutdown(fds_[0], SHUT_WR);
    reader.join();
    ctx_ = nullptr;
    return got;
  }

  // Reads what the peer receives into `got` until it holds `n` bytes or the writer's side
  // closes.
  void read_until(std::string& got, std::size_t n) {
    char buf[65536];
    while (got.size() < n) {
      ssize_t r = ::read(fds_[1], buf, sizeof buf);
      if (r <= 0) break;
      got.append(buf, static_cast<std::size_t>(r));
    }
  }

  // Returns the bytes the cold path has read (weft_body_cold_bytes_total).
  uint64_t cold_bytes() const {
    const std::string text = metrics_->render();
    const std::string name = "\nweft_body_cold_bytes_total ";
    const std::size_t at = text.find(name);
    return at == std::string::npos ? 0 : std::stoull(text.substr(at + name.size()));
  }

  // Records each finished response, in order, into finished_.
  struct Recorder final : ResponseWriter::Owner {
    explicit Recorder(std::vector<Finished>& into) : into_(into) {}
    void on_finished(const Outgoing& o, uint64_t body_sent) override {
      into_.push_back({o.status, body_sent});
    }
    std::vector<Finished>& into_;
  };

  // A file entry for `content` (kept in memory when `cached`, else sent from its fd).
  FileRef file_of(const std::string& content, bool cached) {
    path_ = std::filesystem::temp_directory_path() /
            ("weft-writer-" + std::to_string(::getpid()) + ".bin");
    std::ofstream(path_, std::ios::binary) << content;
    FileRef e = entry_of(::open(path_.c_str(), O_RDONLY | O_CLOEXEC), content);
    if (cached) {
      e->bytes = std::make_unique<char[]>(content.size());
      std::memcpy(e->bytes.get(), content.data(), content.size());
    }
    std::filesystem::remove(path_);
    return e;
  }

  // A file entry for `content` in a file on a disk (a tmpfs keeps every page), written back
  // so that its pages can be dropped, and sent from its fd.
  static FileRef disk_file_of(const std::string& content) {
    char path[] = "/var/tmp/weft-writer-XXXXXX";
    const int fd = ::mkstemp(path);
    ::unlink(path);
    EXPECT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    EXPECT_EQ(::fdatasync(fd), 0);  // dirty pages are not dropped
    return entry_of(fd, content);
  }

  static FileRef entry_of(int fd, const std::string& content) {
    auto* e = new FileEntry();
    e->fd = fd;
    e->size = content.size();
    e->etag = make_etag(1, 0, content.size());
    e->content_type = "application/octet-stream";
    e->fields.build(e->content_type, e->etag.view(), 0, /*mtime_strong=*/false, /*ranges=*/true);
    return FileRef(e);
  }

  void check_multipart(bool cached);

  static Reply file_reply(FileRef f) {
    Reply r;
    r.kind = Reply::Kind::file;
    r.status = 200;
    r.length = f->size;
    r.file = std::move(f);
    return r;
  }

  int fds_[2] = {-1, -1};
  rt::CancelToken token_;
  Config config_;
  std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>(1);
  ServerContext* ctx_ = nullptr;  // during run()
  std::filesystem::path path_;
  std::vector<Finished> finished_;
};

std::size_t count(const std::string& s, std::string_view what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST_F(ResponseWriterTest, PipelinedResponsesGoOutTogetherAndFinishInOrder) {
  FileRef f = file_of("hello world\n", true);
  std::string got = run([&](ResponseWriter& w, ConnectionWork& work) {
    ASSERT_TRUE(w.write(Reply::error_page(404), nullptr, false, {}));
    Reply options;
    options.kind = Reply::Kind::options;
    options.status = 200;
    ASSERT_TRUE(w.write(options, nullptr, false, {}));
    ASSERT_TRUE(w.write(file_reply(f), nullptr, true, {}));
    EXPECT_EQ(work.outgoing_count, 3);  // queued, not sent
    EXPECT_TRUE(finished_.empty());
    ASSERT_TRUE(w.flush());
    EXPECT_EQ(work.outgoing_count, 0);
  });
  ASSERT_EQ(finished_.size(), 3u);
  EXPECT_EQ(finished_[0].status, 404);
  EXPECT_EQ(finished_[0].body_sent, error_body(404).size());
  EXPECT_EQ(finished_[1].status, 200);
  EXPECT_EQ(finished_[1].body_sent, 0u);
  EXPECT_EQ(finished_[2].body_sent, 12u);
  EXPECT_EQ(got.find("HTTP/1.1 404 Not Found\r\n"), 0u) << got;
  EXPECT_NE(got.find("Allow: GET, HEAD, OPTIONS\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK"),
            std::string::npos)
      << got;
  EXPECT_EQ(count(got, "Server: weft\r\n"), 3u);
  EXPECT_EQ(count(got, "Connection: close\r\n"), 1u);  // only the last one closes
  EXPECT_TRUE(got.ends_with("\r\n\r\nhello world\n")) << got;
}

// Issue 43: a large page (a listing of 10,000 long names is megabytes) is freed once sent,
// for GET and HEAD; a small one keeps its memory for the next page.
TEST_F(ResponseWriterTest, ALargePageGivesItsBufferBack) {
  const std::string big(ConnectionWork::kKeepBodyBytes + 4096, 'p');
  std::string got = run([&](ResponseWriter& w, ConnectionWork& work) {
    work.body = big;
    ASSERT_TRUE(w.write(page_reply("text/html"), nullptr, false, {}));
    EXPECT_LE(work.body.capacity(), ConnectionWork::kKeepBodyBytes);
    work.body = big;
    RequestParser parser(config_);
    const std::string_view raw = "HEAD /d/ HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(parser.parse({raw.data(), raw.size()}).status, ParseStatus::ready);
    ASSERT_TRUE(w.write(page_reply("text/html"), &parser.request(), false, {}));
    EXPECT_LE(work.body.capacity(), ConnectionWork::kKeepBodyBytes);
    work.body.assign(1000, 's');
    const std::size_t small = work.body.capacity();
    ASSERT_TRUE(w.write(page_reply("text/html"), nullptr, false, {}));
    EXPECT_TRUE(work.body.empty());
    EXPECT_EQ(work.body.capacity(), small);
    ASSERT_TRUE(w.flush());
  });
  ASSERT_EQ(finished_.size(), 3u);
  EXPECT_EQ(finished_[0].body_sent, big.size());
  EXPECT_EQ(finished_[2].body_sent, 1000u);
  EXPECT_EQ(count(got, big), 1u);  // HEAD: no body
}

TEST_F(ResponseWriterTest, AStreamedBodyIsCountedAsItGoesOut) {
  std::string content(300 * 1024, 'x');
  FileRef f = file_of(content, false);
  std::string got = run([&](ResponseWriter& w, ConnectionWork&) {
    ASSERT_TRUE(w.write(file_reply(f), nullptr, false, {}));  // streams at once
  });
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].body_sent, content.size());
  EXPECT_NE(got.find("Content-Length: 307200\r\n"), std::string::npos);
  EXPECT_TRUE(got.ends_with(content));
}

// The multipart/byteranges body the writer must send for `parts` of `content`.
std::string multipart_body(std::string_view boundary, const std::string& content,
                           std::span<const ByteRange> parts) {
  std::string body;
  for (const ByteRange& p : parts) {
    body.append("\r\n--").append(boundary).append("\r\nContent-Type: application/octet-stream");
    body.append("\r\nContent-Range: bytes " + std::to_string(p.offset) + "-" +
                std::to_string(p.offset + p.length - 1) + "/" + std::to_string(content.size()));
    body.append("\r\n\r\n").append(content, p.offset, p.length);
  }
  return body.append("\r\n--").append(boundary).append("--\r\n");
}

// Sends a multipart reply for three parts of a file (`cached` or sent from its descriptor)
// between two other responses and checks its head, its body byte for byte, and its count.
void ResponseWriterTest::check_multipart(bool cached) {
  std::string content(cached ? 4000 : 300 * 1024, '\0');
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7 + 3);
  const ByteRange parts[] = {{0, 10}, {100, 1}, {content.size() - 50, 50}};
  Reply r = file_reply(file_of(content, cached));
  r.status = 206;
  r.range.kind = RangeResult::Kind::multi;
  r.range.size = content.size();
  r.range.parts = parts;
  r.boundary = "00112233445566778899";
  r.length = *multipart_length(r.boundary, "application/octet-stream", parts, content.size());
  // Behind another response on the same connection, and followed by one: the framing
  // must end exactly where its Content-Length says.
  std::string got = run([&](ResponseWriter& w, ConnectionWork&) {
    EXPECT_TRUE(w.write(Reply::error_page(404), nullptr, false, {}));
    EXPECT_TRUE(w.write(r, nullptr, false, {}));
    EXPECT_TRUE(w.write(Reply::error_page(404), nullptr, false, {}));
    EXPECT_TRUE(w.flush());
  });
  const std::string body = multipart_body(r.boundary, content, parts);
  ASSERT_EQ(finished_.size(), 3u);
  EXPECT_EQ(finished_[1].status, 206);
  EXPECT_EQ(finished_[1].body_sent, body.size());
  EXPECT_EQ(r.length, body.size());
  const std::size_t at = got.find("HTTP/1.1 206 Partial Content\r\n");
  ASSERT_NE(at, std::string::npos) << got.substr(0, 500);
  const std::size_t end = got.find("\r\n\r\n", at) + 4;
  const std::string head = got.substr(at, end - at);
  EXPECT_NE(head.find("Content-Type: multipart/byteranges; boundary=00112233445566778899\r\n"),
            std::string::npos)
      << head;
  EXPECT_EQ(count(head, "Content-Type:"), 1u) << head;
  EXPECT_NE(head.find("\r\nETag: \""), std::string::npos) << head;
  EXPECT_NE(head.find("Content-Length: " + std::to_string(body.size()) + "\r\n"),
            std::string::npos);
  EXPECT_EQ(head.find("Content-Range"), std::string::npos) << head;
  EXPECT_EQ(got.substr(end, body.size()), body);
  EXPECT_EQ(got.find("HTTP/1.1 404 Not Found\r\n", end), end + body.size());
}

TEST_F(ResponseWriterTest, AMultipartBodyOfACachedFile) {
  check_multipart(true);
}

TEST_F(ResponseWriterTest, AMultipartBodySentFromTheDescriptor) {
  check_multipart(false);
}

TEST_F(ResponseWriterTest, AVariantsHeadHasTheOriginalsTypeItsCodingItsTagAndVary) {
  Reply r = file_reply(file_of("GZ", true));
  r.content_type = "text/plain";
  r.encoding = "gzip";
  r.validators = "ETag: \"1-2-gz\"\r\n";
  r.vary = true;
  Reply not_modified = r;
  not_modified.kind = Reply::Kind::not_modified;
  not_modified.status = 304;
  HeadBuffer h, h304;
  run([&](ResponseWriter&, ConnectionWork& work) {
    const HeadOrigin origin{ctx_->config.server_name, ctx_->dates};
    build_head(h, origin, r, nullptr, false, work);
    build_head(h304, origin, not_modified, nullptr, false, work);
  });
  EXPECT_NE(h.view().find("\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n"
                          "ETag: \"1-2-gz\"\r\nAccept-Ranges: bytes\r\n"
                          "Vary: Accept-Encoding\r\nContent-Length: 2\r\n\r\n"),
            std::string_view::npos)
      << h.view();
  EXPECT_EQ(count(std::string(h.view()), "ETag:"), 1u);
  EXPECT_TRUE(h304.view().ends_with("\r\nETag: \"1-2-gz\"\r\nVary: Accept-Encoding\r\n\r\n"))
      << h304.view();
}

TEST_F(ResponseWriterTest, APeerThatIsGoneGetsNothingAndBreaksTheWriter) {
  ::close(std::exchange(fds_[1], -1));
  FileRef f = file_of("hello world\n", true);
  run([&](ResponseWriter& w, ConnectionWork&) {
    ASSERT_TRUE(w.write(file_reply(f), nullptr, false, {}));
    EXPECT_FALSE(w.flush());
    EXPECT_TRUE(w.broken());
    EXPECT_FALSE(w.flush());  // and stays broken
  });
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].body_sent, 0u);
}

TEST_F(ResponseWriterTest, AbandonFinishesWhatIsQueuedAsUnsent) {
  run([&](ResponseWriter& w, ConnectionWork& work) {
    ASSERT_TRUE(w.write(Reply::error_page(400), nullptr, true, {}));
    w.abandon();
    EXPECT_EQ(work.outgoing_count, 0);
  });
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].status, 400);
  EXPECT_EQ(finished_[0].body_sent, 0u);
}

TEST_F(ResponseWriterTest, ManyQueuedResponsesFlushWhenTheQueueIsFull) {
  std::string got = run([&](ResponseWriter& w, ConnectionWork&) {
    for (int i = 0; i < 3 * ConnectionWork::kMaxOutgoing; ++i) {
      ASSERT_TRUE(w.write(Reply::error_page(404), nullptr, false, {}));
    }
    ASSERT_TRUE(w.flush());
  });
  ASSERT_EQ(finished_.size(), 3u * ConnectionWork::kMaxOutgoing);
  for (const Finished& f : finished_) EXPECT_EQ(f.body_sent, error_body(404).size());
  EXPECT_EQ(count(got, "HTTP/1.1 404 Not Found\r\n"), finished_.size());
}

// A body of `size` bytes that differ from their neighbours.
std::string pattern(std::size_t size) {
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i * 7 + i / 4096);
  return s;
}

// Drops the pages of `fd` from the page cache; returns whether [offset, offset + length) is
// then not resident. A page still in another CPU's LRU batch is skipped by DONTNEED: asks
// again, a few times.
bool drop_pages(int fd, uint64_t offset, uint64_t length) {
  for (int tries = 0; tries < 20; ++tries) {
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (!range_resident(fd, offset, length)) return true;
    ::usleep(10'000);
  }
  return false;
}

// io.body = "auto" (issue 32, 2.3): a file found wholly cached a moment ago is sent without
// asking (the memo), but each piece looks at the memo again: once it lapses, the pieces of a
// slow reader are asked about one by one, and pages evicted meanwhile are read through the
// I/O driver rather than by a sendfile that would wait for the disk on the processor.
TEST_F(ResponseWriterTest, EachPieceOfAResidentBodyIsAskedAboutAgain) {
  constexpr std::size_t kMiB = 1 << 20;
  const std::string content = pattern(8 * kMiB);
  FileRef f = disk_file_of(content);
  // No readahead: a piece found resident just before the eviction below is sent by sendfile
  // from the disk (the granularity the feature accepts), and with this disk's 8 MiB readahead
  // that one miss brought the whole rest back, so nothing was left to go cold (1 in 40 under
  // load).
  ::posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
  f->resident_ns.store(rt::to_ns(rt::coarse_now()));  // found wholly resident just now
  bool dropped = false;
  std::string got =
      run([&](ResponseWriter& w,
              ConnectionWork&) { EXPECT_TRUE(w.write(file_reply(f), nullptr, false, {})); },
          [&](std::string& out) {
            read_until(out, 256 * 1024);  // the head and the first pieces; then it dawdles:
            f->resident_ns.store(0);      // the memo lapses,
            // The rest is evicted: all of what the writer cannot have reached yet (it is at
            // most the socket's buffer, about 256 KiB, past what was read).
            dropped = drop_pages(f->fd, 1 * kMiB, 7 * kMiB);
            read_until(out, std::string::npos);  // and it reads on
          });
  if (!dropped) GTEST_SKIP() << "the file system kept the pages";
  EXPECT_TRUE(got.ends_with(content));
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].body_sent, content.size());
  EXPECT_GT(cold_bytes(), 0u) << "the evicted tail went out by sendfile, from the disk";
}

// A client that stops reading a body that is not cached holds no read buffer while it does
// not read: the writer waits for room in the socket before it reads, and reads what fits.
TEST_F(ResponseWriterTest, AStalledReaderOnTheColdPathHoldsNoBuffer) {
  const std::string content = pattern(4 << 20);
  FileRef f = disk_file_of(content);
  if (!drop_pages(f->fd, 0, content.size())) GTEST_SKIP() << "the file system kept the pages";
  std::atomic<bool> reading{false};
  bool idle_without_buffer = false;
  std::string got = run(
      [&](ResponseWriter& w, ConnectionWork&) {
        ResourcePool& pool = *ctx_->pools[0];
        // Runs while the writer waits; bounded: 2,000 looks, 5 ms apart.
        auto observer = rt::spawn([&] {
          for (int i = 0; i < 2000 && !idle_without_buffer; ++i) {
            int queued = 0;
            ::ioctl(fds_[0], SIOCOUTQ, &queued);
            idle_without_buffer = queued >= 64 * 1024 && pool.lent_buffers() == 0;
            if (!idle_without_buffer) rt::sleep_for(std::chrono::milliseconds(5));
          }
          reading.store(true);
        });
        EXPECT_TRUE(w.write(file_reply(f), nullptr, false, {}));
        observer.join();
      },
      [&](std::string& out) {
        // Reads nothing until the observer has looked (bounded: 30 s), then everything.
        for (int i = 0; i < 3000 && !reading.load(); ++i) ::usleep(10'000);
        read_until(out, std::string::npos);
      });
  EXPECT_TRUE(idle_without_buffer) << "a read buffer stayed lent while the client read nothing";
  EXPECT_TRUE(got.ends_with(content));
  ASSERT_EQ(finished_.size(), 1u);
  EXPECT_EQ(finished_[0].body_sent, content.size());
}

}  // namespace
}  // namespace weft::http
