// Tests loadgen/manifest.cpp: entries by rank, and each malformed input's message and line.
#include "loadgen/manifest.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

namespace weft::load {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_manifest(text, "set.txt");
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Manifest, EntriesComeBackByRank) {
  const Manifest m = parse_manifest(
      "# weft-fileset v1 files=3 seed=7\n"
      "# path\tsize\trank\n"
      "/a.html\t1024\t2\n"
      "/img/b.png\t0\t3\n"
      "/c/d.css\t77\t1\n");
  EXPECT_EQ(m.header, "# weft-fileset v1 files=3 seed=7");
  ASSERT_EQ(m.entries.size(), 3u);
  EXPECT_EQ(m.entries[0].path, "/c/d.css");
  EXPECT_EQ(m.entries[0].size, 77u);
  EXPECT_EQ(m.entries[1].path, "/a.html");
  EXPECT_EQ(m.entries[1].size, 1024u);
  EXPECT_EQ(m.entries[2].path, "/img/b.png");
  EXPECT_EQ(m.entries[2].size, 0u);
  EXPECT_EQ(m.total_bytes, 1101u);
}

TEST(Manifest, ToleratesCrlfBlankLinesAndNoFinalNewline) {
  const Manifest m =
      parse_manifest("# weft-fileset v1\r\n\r\n/x\t5\t1\r\n\n/y\t18446744073709551615\t2");
  ASSERT_EQ(m.entries.size(), 2u);
  EXPECT_EQ(m.entries[0].path, "/x");
  EXPECT_EQ(m.entries[1].size, 18446744073709551615ull);
  EXPECT_EQ(parse_manifest("# weft-fileset v1\n/\t1\t1\n").entries[0].path, "/");
}

TEST(Manifest, UnicodePathsPass) {
  const Manifest m = parse_manifest("# weft-fileset v1\n/caf\xc3\xa9.txt\t3\t1\n");
  EXPECT_EQ(m.entries[0].path, "/caf\xc3\xa9.txt");
}

TEST(Manifest, ErrorsNameSourceLineAndProblem) {
  struct Case {
    const char* note;
    const char* text;
    const char* want;  // a substring of the message
  };
  const Case cases[] = {
      {"empty file", "", "set.txt:1: empty file"},
      {"no magic", "/a\t1\t1\n", "set.txt:1: not a weft file-set manifest"},
      {"other version", "# weft-fileset v2\n/a\t1\t1\n", "set.txt:1: unsupported manifest version"},
      {"v10 is not v1", "# weft-fileset v10\n/a\t1\t1\n", "set.txt:1: unsupported"},
      {"no entries", "# weft-fileset v1\n# only comments\n", "set.txt:2: no entries"},
      {"two fields", "# weft-fileset v1\n/a\t1\n", "set.txt:2: expected PATH<TAB>SIZE<TAB>RANK"},
      {"four fields", "# weft-fileset v1\n/a\t1\t1\tx\n", "set.txt:2: expected PATH"},
      {"spaces not tabs", "# weft-fileset v1\n/a 1 1\n", "set.txt:2: expected PATH"},
      {"relative path", "# weft-fileset v1\na.html\t1\t1\n", "set.txt:2: path must start with '/'"},
      {"space in path", "# weft-fileset v1\n/a b\t1\t1\n", "set.txt:2: path contains a space"},
      {"control in path", "# weft-fileset v1\n/a\x01\t1\t1\n", "control character"},
      {"empty path", "# weft-fileset v1\n\t1\t1\n", "set.txt:2: empty path"},
      {"negative size", "# weft-fileset v1\n/a\t-1\t1\n", "set.txt:2: SIZE '-1'"},
      {"size with unit", "# weft-fileset v1\n/a\t1k\t1\n", "set.txt:2: SIZE '1k'"},
      {"size overflow", "# weft-fileset v1\n/a\t18446744073709551616\t1\n", "SIZE"},
      {"rank zero", "# weft-fileset v1\n/a\t1\t0\n", "set.txt:2: RANK '0'"},
      {"rank plus", "# weft-fileset v1\n/a\t1\t+1\n", "set.txt:2: RANK '+1'"},
      {"duplicate rank", "# weft-fileset v1\n/a\t1\t1\n/b\t1\t2\n/c\t1\t1\n",
       "set.txt:4: duplicate rank 1 (first on line 2)"},
      {"missing rank", "# weft-fileset v1\n/a\t1\t1\n/b\t1\t4\n/c\t1\t2\n",
       "set.txt:3: rank 4 is larger than the number of entries (3); ranks must be 1..3 each once, "
       "and rank 3 is missing"},
  };
  for (const Case& c : cases) {
    const std::string err = error_of(c.text);
    EXPECT_NE(err.find(c.want), std::string::npos) << c.note << ": " << err;
  }
}

TEST(Manifest, LoadsFromFileAndNamesIt) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto path = dir / ("weft_manifest_test_" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream out(path);
    out << "# weft-fileset v1\n/only\t9\t1\n";
  }
  const Manifest m = load_manifest(path);
  EXPECT_EQ(m.entries.at(0).path, "/only");
  std::filesystem::remove(path);
  try {
    load_manifest(path);
    ADD_FAILURE() << "a missing file must throw";
  } catch (const ManifestError& e) {
    EXPECT_NE(std::string{e.what()}.find(path.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weft::load
