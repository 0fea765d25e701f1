// Tests server/response_writer over a real socket pair: heads built per Reply kind, pipelined
// responses queued and sent in one go and finished in order with their body bytes, HEAD
// without a body, a body streamed with sendfile, multipart/byteranges bodies (from memory and
// from the descriptor), a peer that is gone (finished unsent, the writer broken), and
// abandon() finishing what is still queued.
#include "server/response_writer.hpp"

#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/io_driver.hpp"
#include "runtime/scheduler.hpp"
#include "server/multipart.hpp"
#include "server/status.hpp"

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
  // until the writer's side closes; returns it.
  std::string run(const std::function<void(ResponseWriter&, ConnectionWork&)>& fn) {
    std::string got;
    std::thread reader([&] {
      char buf[65536];
      while (true) {
        ssize_t n = ::read(fds_[1], buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
      }
    });
    rt::RuntimeOptions o;
    o.processors = 1;
    o.make_driver = rt::make_io_driver_factory(rt::IoOptions{});
    rt::Runtime runtime(o);
    ServerContext ctx(config_);
    ConnectionWork work(config_, 4096);
    runtime.run([&] {
      ResponseWriter w(ctx, fds_[0], "peer", token_, &ResponseWriterTest::on_finished, this);
      w.attach(&work);
      fn(w, work);
      w.abandon();
    });
    ::shutdown(fds_[0], SHUT_WR);
    reader.join();
    return got;
  }

  static void on_finished(void* self, const Outgoing& o, uint64_t body_sent) {
    static_cast<ResponseWriterTest*>(self)->finished_.push_back({o.status, body_sent});
  }

  // A file entry for `content` (kept in memory when `cached`, else sent from its fd).
  FileRef file_of(const std::string& content, bool cached) {
    path_ = std::filesystem::temp_directory_path() /
            ("weft-writer-" + std::to_string(::getpid()) + ".bin");
    std::ofstream(path_, std::ios::binary) << content;
    auto* e = new FileEntry();
    e->fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    e->size = content.size();
    e->etag = make_etag(1, 0, content.size());
    e->content_type = "application/octet-stream";
    e->headers = "Content-Type: application/octet-stream\r\n";
    e->validators_at = e->headers.size();
    e->headers.append("ETag: ").append(e->etag.view()).append("\r\n");
    e->validators_end = e->headers.size();
    e->headers.append("Accept-Ranges: bytes\r\n");
    if (cached) {
      e->bytes = std::make_unique<char[]>(content.size());
      std::memcpy(e->bytes.get(), content.data(), content.size());
    }
    std::filesystem::remove(path_);
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
  run([&](ResponseWriter& w, ConnectionWork&) {
    w.build_head(h, r, nullptr, false);
    w.build_head(h304, not_modified, nullptr, false);
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

}  // namespace
}  // namespace weft::http
