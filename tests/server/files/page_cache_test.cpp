// Tests server/page_cache: a range just written and read is resident; after its pages are
// dropped it is not, by whichever probe this kernel allows.
#include "server/files/page_cache.hpp"

#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace weft::http {
namespace {

class PageCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/var/tmp/weft-page-cache-XXXXXX";  // a disk: a tmpfs keeps its pages
    fd_ = mkstemp(path);
    ASSERT_GE(fd_, 0);
    unlink(path);
    std::string data(kSize, 'p');
    ASSERT_EQ(::write(fd_, data.data(), data.size()), static_cast<ssize_t>(kSize));
    ASSERT_EQ(::pread(fd_, data.data(), data.size(), 0), static_cast<ssize_t>(kSize));
  }
  void TearDown() override { ::close(fd_); }

  static constexpr std::size_t kSize = 1 << 20;
  int fd_ = -1;
};

TEST_F(PageCacheTest, ARangeJustReadIsResident) {
  ResidencyProbe how{};
  EXPECT_TRUE(range_resident(fd_, 0, kSize, &how));
  EXPECT_TRUE(range_resident(fd_, 4095, 2));  // straddles a page boundary
  EXPECT_TRUE(range_resident(fd_, 0, 0));
}

TEST_F(PageCacheTest, DroppedPagesAreNotResident) {
  ASSERT_EQ(::fdatasync(fd_), 0);  // dirty pages are not dropped
  // A page still in another CPU's LRU batch is skipped by DONTNEED: ask again, a few times.
  bool dropped = false;
  for (int tries = 0; tries < 20 && !dropped; ++tries) {
    ASSERT_EQ(::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED), 0);
    dropped = !range_resident(fd_, 0, 4096);
    if (!dropped) ::usleep(10'000);
  }
  if (!dropped) GTEST_SKIP() << "the file system kept the pages";
  EXPECT_FALSE(range_resident(fd_, 512 * 1024, 4096));
  char c;
  ASSERT_EQ(::pread(fd_, &c, 1, 0), 1);  // brings the first page (and readahead) back
  EXPECT_TRUE(range_resident(fd_, 0, 1));
  EXPECT_TRUE(range_resident(fd_, 0, 0));  // nothing to send is always resident
}

}  // namespace
}  // namespace weft::http
