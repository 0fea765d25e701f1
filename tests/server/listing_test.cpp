// Tests server/listing: the page's names, order and escaping; hostile file names that
// must not become live markup or links (a "javascript:" name, quotes, angle brackets); and
// confinement: a listed directory swapped for a symlink out of the root is refused by the
// resolve rules, on every listing. The cache is never asked for an entry here, so no runtime
// is needed: render_listing makes plain system calls.
#include "server/listing.hpp"

#include <filesystem>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "server/mime_map.hpp"

#include "tests/server/temp_dir.hpp"

namespace weft::http {
namespace {

namespace fs = std::filesystem;

class ListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = make_test_dir("listing");
    fs::create_directories(base_ / "root" / "d");
    fs::create_directories(base_ / "outside");
    std::ofstream(base_ / "outside" / "secret.txt") << "x";
    config_.root = base_ / "root";
    root_fd_ = ::open(config_.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  }
  void TearDown() override {
    ::close(root_fd_);
    fs::remove_all(base_);
  }

  // The listing of `path` under the symlink policy `policy`, or "(refused)".
  std::string list(std::string_view path, SymlinkPolicy policy = SymlinkPolicy::inside_root) {
    config_.symlinks = policy;
    FdCache cache(config_, root_fd_, mime_, nullptr, 16);
    std::string body;
    return render_listing(cache, path, body) ? body : "(refused)";
  }

  fs::path base_;
  Config config_;
  MimeMap mime_{"application/octet-stream"};
  int root_fd_ = -1;
};

TEST_F(ListingTest, ListsNamesSortedWithDirectoriesMarked) {
  std::ofstream(base_ / "root" / "d" / "b.txt") << "b";
  std::ofstream(base_ / "root" / "d" / "a.txt") << "a";
  fs::create_directory(base_ / "root" / "d" / "sub");
  std::string page = list("/d/");
  EXPECT_NE(page.find("<title>Index of /d/</title>"), std::string::npos) << page;
  auto a = page.find("<li><a href=\"./a.txt\">a.txt</a></li>");
  auto b = page.find("<li><a href=\"./b.txt\">b.txt</a></li>");
  auto sub = page.find("<li><a href=\"./sub/\">sub/</a></li>");
  ASSERT_NE(a, std::string::npos) << page;
  ASSERT_NE(b, std::string::npos) << page;
  ASSERT_NE(sub, std::string::npos) << page;
  EXPECT_LT(a, b);
  EXPECT_LT(b, sub);
  EXPECT_NE(page.find("<a href=\"../\">../</a>"), std::string::npos);
}

TEST_F(ListingTest, HostileNamesStayTextAndRelativeLinks) {
  for (const char* name : {"javascript:alert(document.domain)", "a\"onmouseover=\"x", "<b>x",
                           "it's", "data:text,x", "%41"}) {
    std::ofstream(base_ / "root" / "d" / name) << "x";
  }
  std::string page = list("/d/");
  // Every href is relative ("./..."), and the bytes that could end an attribute, start a
  // tag or a scheme are encoded.
  EXPECT_NE(page.find("href=\"./javascript%3Aalert%28document.domain%29\""), std::string::npos)
      << page;
  EXPECT_NE(page.find("href=\"./a%22onmouseover=%22x\""), std::string::npos) << page;
  EXPECT_NE(page.find("href=\"./%3Cb%3Ex\""), std::string::npos) << page;
  EXPECT_NE(page.find("href=\"./it%27s\""), std::string::npos) << page;
  EXPECT_NE(page.find("href=\"./data%3Atext,x\""), std::string::npos) << page;
  EXPECT_NE(page.find("href=\"./%2541\""), std::string::npos) << page;
  // The link texts are escaped HTML.
  EXPECT_NE(page.find(">&lt;b&gt;x</a>"), std::string::npos) << page;
  EXPECT_NE(page.find(">a&quot;onmouseover=&quot;x</a>"), std::string::npos) << page;
  EXPECT_NE(page.find(">it&#39;s</a>"), std::string::npos) << page;
  EXPECT_EQ(page.find("href=\"javascript"), std::string::npos) << page;
  EXPECT_EQ(page.find("<b>"), std::string::npos) << page;
}

TEST_F(ListingTest, ADirectorySwappedForASymlinkOutOfTheRootIsRefused) {
  // The repro of a listing that escaped: list /d/, then replace d by a link to outside.
  EXPECT_NE(list("/d/"), "(refused)");
  fs::remove(base_ / "root" / "d");
  fs::create_directory_symlink(base_ / "outside", base_ / "root" / "d");
  EXPECT_EQ(list("/d/"), "(refused)");
  EXPECT_EQ(list("/d/", SymlinkPolicy::deny), "(refused)");
  // A relative link that climbs out is refused too; only "follow" may leave the root.
  fs::remove(base_ / "root" / "d");
  fs::create_directory_symlink("../outside", base_ / "root" / "d");
  EXPECT_EQ(list("/d/"), "(refused)");
  EXPECT_NE(list("/d/", SymlinkPolicy::follow).find("secret.txt"), std::string::npos);
}

TEST_F(ListingTest, ASymlinkInsideTheRootIsListedAsALink) {
  fs::create_directory(base_ / "root" / "target");
  fs::create_directory_symlink("../target", base_ / "root" / "d" / "link");
  std::string page = list("/d/");
  // Whatever readdir says of the link's type, it is not followed to decide it.
  EXPECT_NE(page.find("href=\"./link\">link</a>"), std::string::npos) << page;
}

TEST_F(ListingTest, AMissingOrPlainFileIsNotListed) {
  std::ofstream(base_ / "root" / "f.txt") << "f";
  EXPECT_EQ(list("/nope/"), "(refused)");
  EXPECT_EQ(list("/f.txt/"), "(refused)");
}

TEST(HtmlEscapeTest, EscapesTheFiveMarkupBytes) {
  std::string out;
  append_html_escaped("a&b<c>d\"e'f", out);
  EXPECT_EQ(out, "a&amp;b&lt;c&gt;d&quot;e&#39;f");
}

}  // namespace
}  // namespace weft::http
