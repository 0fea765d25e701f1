// Tests server/http/path.cpp: a table of targets, every traversal form among them, to normalized
// paths or 400/404.
#include "server/http/path.hpp"

#include <string>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

using namespace std::string_literals;

struct Case {
  const char* note;
  std::string raw;
  TargetStatus status;
  std::string path;  // when ok
};

constexpr TargetStatus kOk = TargetStatus::ok;
constexpr TargetStatus k400 = TargetStatus::bad_request;
constexpr TargetStatus k404 = TargetStatus::not_found;

const Case kCases[] = {
    // Plain paths.
    {"root", "/", kOk, "/"},
    {"file", "/index.html", kOk, "/index.html"},
    {"nested", "/a/b/c.txt", kOk, "/a/b/c.txt"},
    {"directory keeps its slash", "/docs/", kOk, "/docs/"},
    {"query ignored", "/a.txt?x=1&y=../../etc", kOk, "/a.txt"},
    {"query on root", "/?q", kOk, "/"},
    {"fragment ignored", "/a.txt#frag", kOk, "/a.txt"},
    {"query then fragment", "/a?b#c", kOk, "/a"},
    {"fragment with slash", "/a#/../../x", kOk, "/a"},
    {"percent-encoded space", "/a%20b", kOk, "/a b"},
    {"lower and upper hex", "/%41%6a", kOk, "/Aj"},
    {"encoded query char stays in the path", "/a%3Fb", kOk, "/a?b"},
    {"encoded hash stays in the path", "/a%23b", kOk, "/a#b"},
    {"UTF-8 bytes", "/caf%C3%A9", kOk, "/caf\xc3\xa9"},
    {"raw UTF-8 bytes", "/caf\xc3\xa9", kOk, "/caf\xc3\xa9"},
    {"backslash is a name byte", "/a\\b", kOk, "/a\\b"},
    {"encoded backslash is a name byte", "/a%5C..%5Cb", kOk, "/a\\..\\b"},
    {"backslash dot-dot is a name", "/..\\..\\etc\\passwd", kOk, "/..\\..\\etc\\passwd"},
    {"three dots is a name", "/a/.../b", kOk, "/a/.../b"},
    {"dot-prefixed name", "/.well-known/x", kOk, "/.well-known/x"},
    {"dot-dot-prefixed name", "/..a/b..", kOk, "/..a/b.."},

    // Slashes and dot segments (RFC 3986 §5.2.4).
    {"repeated slashes", "//a///b//", kOk, "/a/b/"},
    {"//etc/passwd", "//etc/passwd", kOk, "/etc/passwd"},
    {"dot segment", "/a/./b", kOk, "/a/b"},
    {"trailing dot means directory", "/a/.", kOk, "/a/"},
    {"dot-dot inside", "/a/b/../c", kOk, "/a/c"},
    {"trailing dot-dot means directory", "/a/b/..", kOk, "/a/"},
    {"dot-dot to root", "/a/..", kOk, "/"},
    {"dot only", "/.", kOk, "/"},
    {"dots and slashes", "/./././", kOk, "/"},
    {"dot-dot back down", "/a/../b/../c/./d", kOk, "/c/d"},

    // Traversal: 400 as soon as ".." would climb above the root, however it is spelled.
    {"../", "/../", k400, ""},
    {"..", "/..", k400, ""},
    {"../etc/passwd", "/../etc/passwd", k400, ""},
    {"/a/../../b", "/a/../../b", k400, ""},
    {"%2e%2e/", "/%2e%2e/etc/passwd", k400, ""},
    {"%2E%2e%2f", "/%2E%2e%2fetc%2fpasswd", k400, ""},
    {"..%2f", "/..%2fetc/passwd", k400, ""},
    {"..%2F deep", "/a/..%2F..%2Fetc", k400, ""},
    {".%2e", "/.%2e/x", k400, ""},
    {"%2e.", "/%2e./x", k400, ""},
    {"%2F is a slash (NGINX)", "/a%2Fb", kOk, "/a/b"},
    {"%2F%2F merges", "/a%2F%2F%2Fb", kOk, "/a/b"},
    {"%2F then dot-dot inside", "/a%2Fb%2F..%2Fc", kOk, "/a/c"},
    {"%252e%252e decoded once only", "/%252e%252e/etc", kOk, "/%2e%2e/etc"},
    {"%252f decoded once only", "/a%252f..%252fb", kOk, "/a%2f..%2fb"},
    {"overlong UTF-8 %c0%ae%c0%ae/ stays bytes", "/%c0%ae%c0%ae/etc", kOk, "/\xc0\xae\xc0\xae/etc"},
    {"overlong UTF-8 %c0%af stays bytes", "/..%c0%af..%c0%afetc", kOk,
     "/..\xc0\xaf..\xc0\xaf"
     "etc"},
    {"%e0%80%ae stays bytes", "/%e0%80%ae%e0%80%ae/x", kOk, "/\xe0\x80\xae\xe0\x80\xae/x"},

    // Bad escapes and NUL.
    {"NUL encoded", "/a%00.txt", k400, ""},
    {"NUL raw", "/a\0.txt"s, k400, ""},
    {"truncated escape", "/a%2", k400, ""},
    {"lone percent", "/a%", k400, ""},
    {"non-hex escape", "/a%zz", k400, ""},
    {"half-hex escape", "/a%2g", k400, ""},
    {"bad escape in the query is not looked at", "/a?%zz", kOk, "/a"},

    // Forms.
    {"absolute-form", "http://example.com/a/b", kOk, "/a/b"},
    {"absolute-form https", "https://example.com/a", kOk, "/a"},
    {"absolute-form scheme case", "HTTP://example.com/a", kOk, "/a"},
    {"absolute-form with port", "http://example.com:8080/a?q", kOk, "/a"},
    {"absolute-form no path", "http://example.com", kOk, "/"},
    {"absolute-form query only", "http://example.com?x", kOk, "/"},
    {"absolute-form Host trick http://evil/../x", "http://evil/../x", k400, ""},
    {"absolute-form encoded traversal", "http://evil/%2e%2e/x", k400, ""},
    {"absolute-form authority with dot-dot", "http://../x", kOk, "/x"},
    {"absolute-form empty host", "http:///etc/passwd", k400, ""},
    {"absolute-form userinfo", "http://user@evil/x", k400, ""},
    {"other scheme", "ftp://example.com/a", k400, ""},
    {"file scheme", "file:///etc/passwd", k400, ""},
    {"asterisk-form", "*", k400, ""},
    {"authority-form", "example.com:443", k400, ""},
    {"relative", "a/b", k400, ""},
    {"empty", "", k400, ""},
    {"dot-dot relative", "../x", k400, ""},

    // Lengths that cannot name a file.
    {"segment at NAME_MAX", "/" + std::string(255, 'n'), kOk, "/" + std::string(255, 'n')},
    {"segment over NAME_MAX", "/" + std::string(256, 'n'), k404, ""},
    {"path over PATH_MAX",
     std::string(20, '/') +
         [] {
           std::string s;
           for (int i = 0; i < 20; ++i) s += "/" + std::string(250, 'p');
           return s;
         }(),
     k404, ""},
    {"long path shrunk by dot-dot",
     [] {
       std::string s;
       for (int i = 0; i < 40; ++i) s += "/" + std::string(200, 'q') + "/..";
       return s + "/f";
     }(),
     kOk, "/f"},
};

TEST(NormalizeTarget, Table) {
  std::string out;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.note);
    const TargetStatus s = normalize_target(c.raw, out);
    EXPECT_EQ(s, c.status);
    if (c.status == kOk && s == kOk) {
      EXPECT_EQ(out, c.path);
    }
  }
}

TEST(NormalizeTarget, ResultInvariants) {
  std::string out;
  for (const Case& c : kCases) {
    if (normalize_target(c.raw, out) != kOk) continue;
    SCOPED_TRACE(c.note);
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.front(), '/');
    EXPECT_EQ(out.find("//"), std::string::npos);
    EXPECT_EQ(out.find('\0'), std::string::npos);
    std::size_t start = 1;
    while (start < out.size()) {
      const std::size_t end = std::min(out.find('/', start), out.size());
      const std::string seg = out.substr(start, end - start);
      EXPECT_NE(seg, ".");
      EXPECT_NE(seg, "..");
      start = end + 1;
    }
  }
}

TEST(NormalizeTarget, ReusesTheOutputString) {
  std::string out;
  out.reserve(1024);
  const char* data = out.data();
  ASSERT_EQ(normalize_target("/a/b/../c", out), kOk);
  ASSERT_EQ(normalize_target("/%2e/x", out), kOk);
  EXPECT_EQ(out, "/x");
  EXPECT_EQ(out.data(), data);  // no reallocation for paths within capacity
}

TEST(NormalizeTarget, StatusAndAsteriskForm) {
  EXPECT_EQ(http_status(TargetStatus::ok), 0);
  EXPECT_EQ(http_status(TargetStatus::bad_request), 400);
  EXPECT_EQ(http_status(TargetStatus::not_found), 404);
  EXPECT_TRUE(is_asterisk_form("*"));
  EXPECT_FALSE(is_asterisk_form("/*"));
  EXPECT_FALSE(is_asterisk_form("**"));
}

}  // namespace
}  // namespace weft::http
