// Tests server/http/mime_map.cpp: the mime.types format, first-file-wins order, lookups by the last
// extension without case, the default type, and the shipped conf/mime.types.
#include "server/http/mime_map.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

namespace fs = std::filesystem;

fs::path source_dir() {
  const char* dir = std::getenv("WEFT_SOURCE_DIR");
  return dir ? fs::path{dir} : fs::current_path();
}

// A temporary directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "weft-mime-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path write(const std::string& name, std::string_view text) const {
    const fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(MimeMap, ParsesTheApacheFormat) {
  MimeMap map("application/octet-stream");
  const std::size_t added = map.add_text(
      "# a comment line\n"
      "\n"
      "text/html\thtml htm   shtml\n"
      "   image/png png   # trailing comment\n"
      "text/plain txt\r\n"
      "application/x-no-extensions\n"
      "notatype ext\n"
      "text/css\t\tCSS\n");
  EXPECT_EQ(added, 6u);
  EXPECT_EQ(map.size(), 6u);
  EXPECT_EQ(map.lookup("/index.html"), "text/html");
  EXPECT_EQ(map.lookup("/a.htm"), "text/html");
  EXPECT_EQ(map.lookup("/a.shtml"), "text/html");
  EXPECT_EQ(map.lookup("/img/a.png"), "image/png");
  EXPECT_EQ(map.lookup("/a.txt"), "text/plain");  // the CR of a CRLF file is not in the ext
  EXPECT_EQ(map.lookup("/a.css"), "text/css");    // extensions are stored lower-case
  EXPECT_EQ(map.lookup("/a.ext"), "application/octet-stream");
  EXPECT_EQ(map.lookup("/a.comment"), "application/octet-stream");
}

TEST(MimeMap, LooksUpTheLastExtensionWithoutCase) {
  MimeMap map("application/octet-stream");
  map.add_text("application/gzip gz\napplication/x-tar tar\ntext/html html\n");
  const std::pair<const char*, const char*> cases[] = {
      {"/a.tar.gz", "application/gzip"},
      {"/a.TAR", "application/x-tar"},
      {"/A.HtMl", "text/html"},
      {"/dir.html/file", "application/octet-stream"},  // the extension of the last segment only
      {"/dir.html/", "application/octet-stream"},
      {"/noext", "application/octet-stream"},
      {"/trailing.", "application/octet-stream"},
      {"/.html", "text/html"},  // like NGINX: the text after the last dot
      {"html", "application/octet-stream"},
      {"a.html", "text/html"},  // a bare name works too
      {"", "application/octet-stream"},
  };
  for (const auto& [path, type] : cases) EXPECT_EQ(map.lookup(path), type) << path;
  EXPECT_EQ(map.lookup("/a." + std::string(100, 'x')), "application/octet-stream");
}

TEST(MimeMap, FirstMappingWins) {
  MimeMap map("application/octet-stream");
  map.add_text("text/first js\n");
  EXPECT_EQ(map.add_text("application/javascript js mjs\n"), 1u);  // only mjs is new
  EXPECT_EQ(map.lookup("/a.js"), "text/first");
  EXPECT_EQ(map.lookup("/a.mjs"), "application/javascript");
  map.add_text("text/upper JS\n");  // same extension in another case: still known
  EXPECT_EQ(map.lookup("/a.js"), "text/first");
}

TEST(MimeMap, ConfiguredFileThenSystemFile) {
  TempDir dir;
  Config config;
  config.mime_types = dir.write("mime.types", "text/x-ours txt\ntext/html html\n");
  config.default_type = "application/x-default";
  const fs::path system = dir.write("system.types", "text/plain txt\nimage/x-sys sys\n");
  const MimeMap map = load_mime_map(config, system);
  EXPECT_EQ(map.lookup("/a.txt"), "text/x-ours");  // the configured file wins
  EXPECT_EQ(map.lookup("/a.sys"), "image/x-sys");  // the system file fills gaps
  EXPECT_EQ(map.lookup("/a.unknown"), "application/x-default");
  EXPECT_EQ(map.default_type(), "application/x-default");
}

TEST(MimeMap, MissingSystemFileIsFine) {
  TempDir dir;
  Config config;
  config.mime_types = dir.write("mime.types", "text/html html\n");
  const MimeMap map = load_mime_map(config, dir.path() / "no-such-file");
  EXPECT_EQ(map.size(), 1u);
}

TEST(MimeMap, EmptyConfiguredPathMeansSystemFileOnly) {
  TempDir dir;
  Config config;
  const MimeMap map = load_mime_map(config, dir.write("system.types", "image/png png\n"));
  EXPECT_EQ(map.lookup("/a.png"), "image/png");
}

TEST(MimeMap, UnreadableConfiguredFileIsAConfigError) {
  TempDir dir;
  Config config;
  config.mime_types = dir.path() / "missing.types";
  EXPECT_THROW(load_mime_map(config, dir.path() / "none"), ConfigError);
  MimeMap map("x/y");
  EXPECT_FALSE(map.add_file(dir.path() / "missing.types"));
  EXPECT_FALSE(map.add_file(dir.path()));  // a directory
}

TEST(MimeMap, ShippedMapCoversTheBundledSite) {
  MimeMap map("application/octet-stream");
  ASSERT_TRUE(map.add_file(source_dir() / "conf/mime.types"));
  EXPECT_EQ(map.lookup("/index.html"), "text/html");
  EXPECT_EQ(map.lookup("/css/site.css"), "text/css");
  EXPECT_EQ(map.lookup("/img/weft.png"), "image/png");
  EXPECT_EQ(map.lookup("/img/weft.svg"), "image/svg+xml");
  EXPECT_EQ(map.lookup("/hello.txt"), "text/plain");
  EXPECT_EQ(map.lookup("/app.js"), "application/javascript");
}

}  // namespace
}  // namespace weft::http
