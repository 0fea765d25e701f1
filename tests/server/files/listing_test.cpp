// Tests server/listing: what read_listing finds (types, sizes, dates, symlinks never
// followed, the bound on entries), sort_listing's orders, the query string and Accept
// choices, the page's names, order and escaping; hostile file names that must not become
// live markup or links (a "javascript:" name, quotes, angle brackets); and confinement: a
// listed directory swapped for a symlink out of the root is refused by the resolve rules,
// on every listing. The cache is never asked for an entry here, so no runtime is needed:
// render_listing makes plain system calls (one test runs it on a fiber: it yields).
#include "server/files/listing.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "runtime/fiber.hpp"
#include "runtime/scheduler.hpp"
#include "server/files/listing_page.hpp"
#include "server/http/mime_map.hpp"

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
  std::string list(std::string_view path, SymlinkPolicy policy = SymlinkPolicy::inside_root,
                   ListingOptions options = {}) {
    config_.symlinks = policy;
    FdCache cache(config_, root_fd_, mime_, nullptr, 16);
    std::string body;
    return render_listing(cache, path, options, body) ? body : "(refused)";
  }

  // read_listing of root/`dir`, bounded by `max`.
  Listing read(const std::string& dir, std::size_t max = 100) {
    Listing l;
    int dfd = ::open((base_ / "root" / dir).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    EXPECT_TRUE(dfd >= 0 && read_listing(dfd, max, l)) << dir;
    return l;
  }

  // Writes `size` bytes to root/`rel` and sets its mtime (not following a link).
  void make_file(const std::string& rel, std::size_t size, std::int64_t mtime) {
    std::ofstream(base_ / "root" / rel) << std::string(size, 'x');
    set_mtime(rel, mtime);
  }
  void set_mtime(const std::string& rel, std::int64_t mtime) {
    timespec ts[2] = {{mtime, 0}, {mtime, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (base_ / "root" / rel).c_str(), ts, AT_SYMLINK_NOFOLLOW), 0);
  }

  fs::path base_;
  Config config_;
  MimeMap mime_{"application/octet-stream"};
  int root_fd_ = -1;
};

TEST_F(ListingTest, ListsDirectoriesFirstWithSizesAndDates) {
  make_file("d/b.txt", 2000, 1700000000);
  make_file("d/a.txt", 1, 1700000060);
  fs::create_directory(base_ / "root" / "d" / "sub");
  set_mtime("d/sub", 1700000120);
  std::string page = list("/d/");
  EXPECT_NE(page.find("<title>Index of /d/</title>"), std::string::npos) << page;
  auto sub = page.find(
      "<tr><td><a href=\"./sub/\">sub/</a></td><td>-</td>"
      "<td><time datetime=\"2023-11-14T22:15:20Z\">2023-11-14 22:15</time>"
      "</td></tr>");
  auto a = page.find(
      "<tr><td><a href=\"./a.txt\">a.txt</a></td><td title=\"1\">1</td>"
      "<td><time datetime=\"2023-11-14T22:14:20Z\">2023-11-14 22:14</time>"
      "</td></tr>");
  auto b = page.find("<a href=\"./b.txt\">b.txt</a></td><td title=\"2000\">2.0K</td>");
  ASSERT_NE(a, std::string::npos) << page;
  ASSERT_NE(b, std::string::npos) << page;
  ASSERT_NE(sub, std::string::npos) << page;
  EXPECT_LT(sub, a);  // directories first
  EXPECT_LT(a, b);
  EXPECT_NE(page.find("<a href=\"../\">../</a>"), std::string::npos);
  EXPECT_EQ(page.find("class=\"truncated\""), std::string::npos);
}

TEST_F(ListingTest, ReadsTypesSizesAndDatesWithoutFollowingLinks) {
  make_file("d/f", 5, 1600000000);
  fs::create_directory(base_ / "root" / "d" / "sub");
  // Links are never followed: one to a directory inside the root, one out of it (whose
  // target's size must not show), one dangling.
  fs::create_directory_symlink("sub", base_ / "root" / "d" / "to-sub");
  fs::create_symlink(base_ / "outside" / "secret.txt", base_ / "root" / "d" / "to-secret");
  fs::create_symlink("nowhere", base_ / "root" / "d" / "dangling");
  set_mtime("d/to-secret", 1500000000);
  ASSERT_EQ(::mkfifo((base_ / "root" / "d" / "fifo").c_str(), 0600), 0);
  Listing l = read("d");
  EXPECT_FALSE(l.truncated);
  ASSERT_EQ(l.entries.size(), 6u);
  for (const ListingEntry& e : l.entries) {
    std::string_view n = l.name(e);
    SCOPED_TRACE(n);
    EXPECT_TRUE(e.known);
    EntryType want = n == "f"      ? EntryType::file
                     : n == "sub"  ? EntryType::directory
                     : n == "fifo" ? EntryType::other
                                   : EntryType::symlink;
    EXPECT_EQ(e.type, want);
    EXPECT_EQ(e.size, n == "f" ? 5u : 0u);
    if (n == "f") {
      EXPECT_EQ(e.mtime, 1600000000);
    }
    if (n == "to-secret") {
      EXPECT_EQ(e.mtime, 1500000000);  // the link's own
    }
  }
}

TEST_F(ListingTest, ReadsAtMostTheBoundAndSaysSo) {
  for (int i = 0; i < 10; ++i) make_file("d/f" + std::to_string(i), 1, 1700000000);
  Listing l = read("d", 3);
  EXPECT_EQ(l.entries.size(), 3u);
  EXPECT_TRUE(l.truncated);
  l = read("d", 10);  // exactly the bound: whole
  EXPECT_EQ(l.entries.size(), 10u);
  EXPECT_FALSE(l.truncated);
  // Both forms carry the marker.
  ListingOptions o;
  o.max_entries = 4;
  std::string page = list("/d/", SymlinkPolicy::inside_root, o);
  EXPECT_NE(page.find("<p class=\"truncated\">"), std::string::npos) << page;
  o.format = ListingFormat::json;
  std::string json = list("/d/", SymlinkPolicy::inside_root, o);
  EXPECT_EQ(json.rfind("{\"path\":\"/d/\",\"truncated\":true,\"entries\":[", 0), 0u) << json;
}

// Issue 43: a large listing lets the processor's other fibers run between batches of
// fstatat calls: one processor, a fiber that counts its turns while the listing is read.
TEST_F(ListingTest, ALargeListingYieldsToOtherFibers) {
  constexpr int kFiles = 1000;
  for (int i = 0; i < kFiles; ++i) make_file("d/f" + std::to_string(i), 1, 1700000000);
  rt::RuntimeOptions o;
  o.processors = 1;
  rt::Runtime runtime(o);
  int turns = 0;
  std::size_t listed = 0;
  runtime.run([&] {
    bool done = false;
    rt::FiberHandle other = rt::spawn([&] {
      while (!done) {
        ++turns;
        rt::yield();
      }
    });
    listed = read("d", kFiles).entries.size();
    done = true;
    other.join();
  });
  EXPECT_EQ(listed, static_cast<std::size_t>(kFiles));
  EXPECT_GE(turns, static_cast<int>(kFiles / kListingStatsPerTurn) - 1);
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
  EXPECT_NE(page.find("href=\"./link\">link</a></td><td>-</td>"), std::string::npos) << page;
}

TEST_F(ListingTest, AMissingOrPlainFileIsNotListed) {
  std::ofstream(base_ / "root" / "f.txt") << "f";
  EXPECT_EQ(list("/nope/"), "(refused)");
  EXPECT_EQ(list("/f.txt/"), "(refused)");
}

// A listing built by hand: names with sizes and dates, in the order given.
struct Made {
  Listing listing;
  void add(std::string_view name, EntryType type, std::uint64_t size, std::int64_t mtime) {
    ListingEntry e;
    e.name_at = static_cast<std::uint32_t>(listing.names.size());
    e.name_len = static_cast<std::uint16_t>(name.size());
    e.type = type;
    e.known = true;
    e.size = size;
    e.mtime = mtime;
    listing.names.append(name);
    listing.entries.push_back(e);
  }
  std::string sorted(ListingOrder order) {
    sort_listing(listing, order);
    std::string out;
    for (const ListingEntry& e : listing.entries) out.append(listing.name(e)).append(" ");
    return out;
  }
};

TEST(SortListingTest, EveryOrderDirectoriesFirstTiesByName) {
  const EntryType F = EntryType::file, D = EntryType::directory, L = EntryType::symlink;
  struct Row {
    ListingOrder order;
    const char* want;
  } rows[] = {
      {{ListingKey::name, false}, "A/ b/ B c e l x "},
      {{ListingKey::name, true}, "b/ A/ x l e c B "},
      // Directories by name under size; the link and the empty file tie at 0: by name.
      {{ListingKey::size, false}, "A/ b/ e l c x B "},
      {{ListingKey::size, true}, "b/ A/ B c x e l "},
      {{ListingKey::date, false}, "b/ A/ x c e l B "},
      {{ListingKey::date, true}, "A/ b/ B l c e x "},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.want);
    Made m;
    m.add("x", F, 30, 10);
    m.add("B", F, 50, 40);  // upper case sorts first: bytes, as NGINX
    m.add("b/", D, 4096, 5);
    m.add("c", F, 30, 20);
    m.add("A/", D, 4096, 50);
    m.add("e", F, 0, 20);
    m.add("l", L, 0, 30);
    EXPECT_EQ(m.sorted(r.order), r.want);
  }
}

TEST(ListingOrderTest, QueryStrings) {
  struct Row {
    const char* query;
    ListingKey key;
    bool descending;
  } rows[] = {
      {"", ListingKey::name, false},
      {"?sort=size", ListingKey::size, false},
      {"sort=date&order=desc", ListingKey::date, true},
      {"?order=desc", ListingKey::name, true},
      {"?order=asc&sort=size", ListingKey::size, false},
      {"?a=1&sort=date&b", ListingKey::date, false},
      {"?sort=bogus&order=desc", ListingKey::name, true},  // each falls back alone
      {"?sort=size&order=up", ListingKey::size, false},
      {"?sort=SIZE&order=DESC", ListingKey::name, false},  // exact values only
      {"?sort=%73ize", ListingKey::name, false},
      {"?sort", ListingKey::name, false},
      {"?sort=&order=", ListingKey::name, false},
      {"?sort=size;order=desc", ListingKey::name, false},
      {"?sort=date&sort=size", ListingKey::date, false},  // the first counts
      {"?xsort=size&sortx=date", ListingKey::name, false},
      {"?&&sort=size&&", ListingKey::size, false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.query);
    ListingOrder o = parse_listing_order(r.query);
    EXPECT_EQ(o.key, r.key);
    EXPECT_EQ(o.descending, r.descending);
  }
}

TEST(ListingFormatTest, JsonOnlyWhenItWeighsMore) {
  auto format = [](std::string_view accept) {
    std::vector<Header> h{{"Host", "x", Field::host}, {"Accept", accept, Field::other}};
    return listing_format(h);
  };
  EXPECT_EQ(listing_format({}), ListingFormat::html);
  EXPECT_EQ(format("*/*"), ListingFormat::html);
  EXPECT_EQ(format("application/json"), ListingFormat::json);
  EXPECT_EQ(format("application/json;q=0.9, text/html"), ListingFormat::html);
  EXPECT_EQ(format("application/json, text/html;q=0.9"), ListingFormat::json);
  EXPECT_EQ(format("text/plain"), ListingFormat::html);  // nothing wanted: HTML anyway
}

}  // namespace
}  // namespace weft::http
