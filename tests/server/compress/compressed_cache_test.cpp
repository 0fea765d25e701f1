// Tests server/compress/compressed_cache.cpp: one claim per key, stored and useless results,
// a changed file's record dropped (never returned), the byte bound evicting least recently
// used records and never pending ones, and scopes kept apart.
#include "server/compress/compressed_cache.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

using Found = CompressedCache::Found;
constexpr auto Z = ContentCoding::zstd;
constexpr auto G = ContentCoding::gzip;
const int kScope = 0;  // an fd cache's address, as the handler passes it
const void* const kSite = &kScope;

// A file as the fd cache would describe it.
FileRef file(std::string path, uint64_t size, int64_t mtime = 1000, uint64_t ino = 7) {
  auto* f = new FileEntry;
  f->path = std::move(path);
  f->size = size;
  f->mtime = mtime;
  f->ino = ino;
  f->dev = 1;
  return FileRef(f);
}

// A representation of `size` bytes.
FileRef rep(uint64_t size) {
  auto* e = new FileEntry;
  e->size = size;
  e->bytes = std::make_unique<char[]>(size);
  return FileRef(e);
}

TEST(CompressedCache, OneClaimThenReady) {
  CompressedCache c(1 << 20);
  FileRef f_ref = file("/a.js", 1000);
  const FileEntry& f = *f_ref;
  FileRef out;
  EXPECT_EQ(c.find(kSite, f, Z, false, out), Found::absent);
  EXPECT_EQ(c.find(kSite, f, Z, true, out), Found::claimed);
  // Everyone else meanwhile: nothing, and no second claim.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.find(kSite, f, Z, true, out), Found::pending);
  EXPECT_EQ(c.find(kSite, f, G, true, out), Found::claimed);  // another coding: its own key
  FileRef r = rep(300);
  c.store(kSite, f, Z, r);
  ASSERT_EQ(c.find(kSite, f, Z, true, out), Found::ready);
  EXPECT_EQ(out.get(), r.get());
  EXPECT_EQ(c.bytes(), 300u);
  EXPECT_EQ(c.entries(), 2u);
}

TEST(CompressedCache, UselessIsRememberedAndDropAllowsANewClaim) {
  CompressedCache c(1 << 20);
  FileRef f_ref = file("/r.txt", 1000);
  const FileEntry& f = *f_ref;
  FileRef out;
  ASSERT_EQ(c.find(kSite, f, Z, true, out), Found::claimed);
  c.store(kSite, f, Z, {});
  EXPECT_EQ(c.find(kSite, f, Z, true, out), Found::useless);
  EXPECT_EQ(c.bytes(), CompressedCache::kUselessCost);
  ASSERT_EQ(c.find(kSite, f, G, true, out), Found::claimed);
  c.drop(kSite, f, G);  // a failed compression: the next request may try again
  EXPECT_EQ(c.find(kSite, f, G, true, out), Found::claimed);
}

TEST(CompressedCache, ChangedFileIsNeverReturned) {
  CompressedCache c(1 << 20);
  FileRef v1_ref = file("/a.js", 1000, 1000, 7);
  const FileEntry& v1 = *v1_ref;
  FileRef out;
  ASSERT_EQ(c.find(kSite, v1, Z, true, out), Found::claimed);
  c.store(kSite, v1, Z, rep(100));
  // Rewritten in place (mtime), renamed over (inode), or resized: stale, dropped, claimed.
  const FileRef versions[] = {file("/a.js", 1000, 1001, 7), file("/a.js", 1000, 1001, 8),
                              file("/a.js", 999, 1001, 8)};
  uint64_t stale = 0;
  for (const FileRef& ref : versions) {
    const FileEntry& v = *ref;
    EXPECT_EQ(c.find(kSite, v, Z, true, out), Found::claimed);
    EXPECT_FALSE(out);
    EXPECT_EQ(c.stale(), ++stale);
    c.store(kSite, v, Z, rep(100));
  }
  EXPECT_EQ(c.entries(), 1u);
  EXPECT_EQ(c.bytes(), 100u);
}

TEST(CompressedCache, PendingOfAnOldVersionBlocksANewClaimUntilStored) {
  CompressedCache c(1 << 20);
  FileRef v1_ref = file("/a.js", 1000, 1000);
  const FileEntry& v1 = *v1_ref;
  FileRef v2_ref = file("/a.js", 1000, 2000);
  const FileEntry& v2 = *v2_ref;
  FileRef out;
  ASSERT_EQ(c.find(kSite, v1, Z, true, out), Found::claimed);
  EXPECT_EQ(c.find(kSite, v2, Z, true, out), Found::pending);  // one compression per key
  c.store(kSite, v1, Z, rep(10));
  EXPECT_EQ(c.find(kSite, v2, Z, true, out), Found::claimed);  // v1's result is stale
  EXPECT_FALSE(out);
}

TEST(CompressedCache, BoundEvictsLeastRecentlyUsed) {
  CompressedCache c(1000);
  FileRef out;
  std::vector<FileRef> files;
  for (int i = 0; i < 4; ++i) files.push_back(file("/f" + std::to_string(i), 5000, 1000, i));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(c.find(kSite, *files[i], Z, true, out), Found::claimed);
    c.store(kSite, *files[i], Z, rep(300));
  }
  ASSERT_EQ(c.find(kSite, *files[0], Z, false, out), Found::ready);  // f0 used: f1 is oldest
  // A pending claim is never evicted, and costs nothing until stored.
  ASSERT_EQ(c.find(kSite, *files[3], G, true, out), Found::claimed);
  ASSERT_EQ(c.find(kSite, *files[3], Z, true, out), Found::claimed);
  c.store(kSite, *files[3], Z, rep(300));
  EXPECT_LE(c.bytes(), 1000u);
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_EQ(c.find(kSite, *files[1], Z, false, out), Found::absent);
  EXPECT_EQ(c.find(kSite, *files[0], Z, false, out), Found::ready);
  EXPECT_EQ(c.find(kSite, *files[3], G, false, out), Found::pending);
  // One representation larger than the whole bound is not kept.
  FileRef big_ref = file("/big", 50000, 1000, 99);
  const FileEntry& big = *big_ref;
  ASSERT_EQ(c.find(kSite, big, Z, true, out), Found::claimed);
  c.store(kSite, big, Z, rep(2000));
  EXPECT_EQ(c.find(kSite, big, Z, false, out), Found::absent);
  EXPECT_LE(c.bytes(), 1000u);
}

TEST(CompressedCache, ScopesAreApart) {
  CompressedCache c(1 << 20);
  const int other = 0;
  FileRef f_ref = file("/index.html", 1000);
  const FileEntry& f = *f_ref;
  FileRef out;
  ASSERT_EQ(c.find(kSite, f, Z, true, out), Found::claimed);
  c.store(kSite, f, Z, rep(10));
  EXPECT_EQ(c.find(&other, f, Z, false, out), Found::absent);  // another site's root
}

}  // namespace
}  // namespace weft::http
