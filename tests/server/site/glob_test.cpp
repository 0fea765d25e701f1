// Glob patterns of [[headers]] and [[redirects]]: matching as a table, captures, bounded
// backtracking and compile errors.
#include "server/site/glob.hpp"

#include <string>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

Glob compiled(std::string_view pattern) {
  std::string error;
  auto g = Glob::compile(pattern, error);
  EXPECT_TRUE(g) << pattern << ": " << error;
  return g ? *g : *Glob::compile("/", error);
}

struct MatchCase {
  const char* note;
  const char* pattern;
  const char* path;
  bool matches;
};

TEST(Glob, MatchesAsATable) {
  const MatchCase cases[] = {
      {"exact", "/old", "/old", true},
      {"exact, longer path", "/old", "/old/x", false},
      {"exact, prefix only", "/old/x", "/old", false},
      {"star within a segment", "/a/*.css", "/a/app.css", true},
      {"star empty", "/a/*.css", "/a/.css", true},
      {"star stops at a slash", "/a/*.css", "/a/b/app.css", false},
      {"question one char", "/a?c", "/abc", true},
      {"question not a slash", "/a?c", "/a/c", false},
      {"question not empty", "/a?c", "/ac", false},
      {"double star across", "/assets/**", "/assets/a/b/c.js", true},
      {"double star empty", "/assets/**", "/assets/", true},
      {"double star, not the folder", "/assets/**", "/assets", false},
      {"double star other folder", "/assets/**", "/asset/x", false},
      {"segments zero", "/**/*.html", "/index.html", true},
      {"segments many", "/**/*.html", "/a/b/c.html", true},
      {"segments, wrong suffix", "/**/*.html", "/a/b/c.htm", false},
      {"segments in the middle", "/a/**/z", "/a/z", true},
      {"segments in the middle, deep", "/a/**/z", "/a/b/c/z", true},
      {"segments whole: not a prefix", "/a/**/z", "/a/bz", false},
      {"braces", "/*.{js,css}", "/x.css", true},
      {"braces, other", "/*.{js,css}", "/x.html", false},
      {"braces two groups", "/{a,b}/{c,d}", "/b/c", true},
      {"braces empty choice", "/x{,.html}", "/x", true},
      {"escaped star", "/a\\*b", "/a*b", true},
      {"escaped star is literal", "/a\\*b", "/axb", false},
      {"comma outside braces", "/a,b", "/a,b", true},
      {"double star inside a name", "/a**z", "/a/b/z", true},
      {"case sensitive", "/A", "/a", false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(compiled(c.pattern).match(c.path), c.matches)
        << c.note << ": " << c.pattern << " on " << c.path;
  }
}

TEST(Glob, CapturesEachWildcardAndGroupInOrder) {
  Glob g = compiled("/{blog,news}/*/**");
  EXPECT_EQ(g.captures(), 3u);
  GlobCaptures caps;
  const std::string_view path = "/news/2024/a/b.html";
  ASSERT_TRUE(g.match(path, &caps));
  EXPECT_EQ(caps.count, 3u);
  EXPECT_EQ(caps.get(path, 1), "news");
  EXPECT_EQ(caps.get(path, 2), "2024");
  EXPECT_EQ(caps.get(path, 3), "a/b.html");
  EXPECT_EQ(caps.get(path, 4), "");
  EXPECT_EQ(caps.get(path, 0), "");
}

TEST(Glob, SegmentsCaptureTheirSlashes) {
  Glob g = compiled("/**/*.html");
  GlobCaptures caps;
  std::string_view path = "/a/b/c.html";
  ASSERT_TRUE(g.match(path, &caps));
  EXPECT_EQ(caps.get(path, 1), "a/b/");
  EXPECT_EQ(caps.get(path, 2), "c");
  path = "/c.html";
  ASSERT_TRUE(g.match(path, &caps));
  EXPECT_EQ(caps.get(path, 1), "");
  EXPECT_EQ(caps.get(path, 2), "c");
}

TEST(Glob, ExactPatternsAreMarked) {
  EXPECT_TRUE(compiled("/old/page.html").exact());
  EXPECT_FALSE(compiled("/old/*").exact());
  EXPECT_FALSE(compiled("/{a,b}").exact());
}

TEST(Glob, PathologicalPatternIsBoundedAndFails) {
  // Each "**" may take any length: without the step budget this is exponential in their
  // number. The budget makes it answer (no match) after a bounded amount of work.
  Glob g = compiled("/**a**a**a**a**a**a**a**b");
  const std::string path = "/" + std::string(4000, 'a');
  EXPECT_FALSE(g.match(path));
  // A reasonable pattern on a long path still matches.
  EXPECT_TRUE(compiled("/**/*.js").match("/" + std::string(3000, 'd') + "/x.js"));
}

struct ErrorCase {
  const char* note;
  const char* pattern;
  const char* error_part;
};

TEST(Glob, RefusesBadPatterns) {
  const ErrorCase cases[] = {
      {"empty", "", "must start with '/'"},
      {"relative", "assets/**", "must start with '/'"},
      {"unclosed brace", "/{a,b", "not closed"},
      {"stray close", "/a}", "no '{'"},
      {"wildcard in a group", "/{a,*.js}", "plain text"},
      {"nested group", "/{a,{b}}", "plain text"},
      {"three stars", "/***", "'***'"},
      {"trailing backslash", "/a\\", "ends the pattern"},
      {"control character", "/a\nb", "control"},
      {"too many captures", "/*/*/*/*/*/*/*/*/*/*", "more than 9"},
      {"too many alternatives", "/{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b}", "more than 64"},
  };
  for (const auto& c : cases) {
    std::string error;
    EXPECT_FALSE(Glob::compile(c.pattern, error)) << c.note;
    EXPECT_NE(error.find(c.error_part), std::string::npos) << c.note << ": " << error;
  }
}

}  // namespace
}  // namespace weft::http
