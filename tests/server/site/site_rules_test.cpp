// Site rules: the checks on [[headers]] fields and [[redirects]] destinations, and the
// compiled rules matched against paths (fields in file order, statuses covered, Location with
// encoded captures).
#include "server/site/site_rules.hpp"

#include <string>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

HeaderRuleConfig header_rule(std::string source, std::string name, std::string value,
                             bool always = false) {
  HeaderRuleConfig r;
  r.source = std::move(source);
  r.set.emplace_back(std::move(name), std::move(value));
  r.always = always;
  return r;
}

TEST(SiteRules, RefusesFieldsThatBreakFramingOrThatWeftWrites) {
  for (const char* name :
       {"Content-Length", "transfer-encoding", "CONNECTION", "Keep-Alive", "Upgrade", "TE",
        "Trailer", "Content-Type", "Date", "Server", "ETag", "Location", "Content-Range"}) {
    EXPECT_NE(check_rule_field_name(name), "") << name;
  }
  for (const char* name : {"Cache-Control", "X-Content-Type-Options", "Access-Control-Allow-Origin",
                           "Strict-Transport-Security", "Vary", "Link"}) {
    EXPECT_EQ(check_rule_field_name(name), "") << name;
  }
}

TEST(SiteRules, RefusesNamesThatAreNotTokensAndValuesWithControlBytes) {
  for (std::string name : {std::string{""}, std::string{"X A"}, std::string{"X:A"},
                           std::string{"X\r\nA"}, std::string{"X\0A", 3}, std::string{"Ä"}}) {
    EXPECT_NE(check_rule_field_name(name), "") << name;
  }
  for (std::string value : {std::string{"a\r\nSet-Cookie: x"}, std::string{"a\nb"},
                            std::string{"a\rb"}, std::string{"a\0b", 3}, std::string{"a\x7f"},
                            std::string{" padded"}, std::string{"padded\t"}}) {
    EXPECT_NE(check_rule_field_value(value), "") << value;
  }
  EXPECT_EQ(check_rule_field_value("public, max-age=31536000, immutable"), "");
  EXPECT_EQ(check_rule_field_value("default-src 'self'; img-src *\tx"), "");
  EXPECT_EQ(check_rule_field_value(""), "");
}

TEST(SiteRules, ChecksRedirectDestinations) {
  EXPECT_EQ(check_redirect_destination("/new/$1", 1), "");
  EXPECT_EQ(check_redirect_destination("https://example.com/$2/$1?a=b", 2), "");
  EXPECT_EQ(check_redirect_destination("/price$", 0), "");  // a '$' without a digit is text
  EXPECT_NE(check_redirect_destination("/new/$2", 1).find("uses $2"), std::string::npos);
  EXPECT_NE(check_redirect_destination("", 0), "");
  EXPECT_NE(check_redirect_destination("/a b", 0), "");
  EXPECT_NE(check_redirect_destination("/a\r\nX: y", 0), "");
  // Issue 43: a capture before the path would let the client choose the scheme or host.
  for (const char* d : {"https://blog.example.com$1", "https://$1.example.com/", "//ex.test$1/",
                        "https://ex.test:$1/", "$1://ex.test/", "https:$1", "mailto:$1"}) {
    EXPECT_NE(check_redirect_destination(d, 1).find("before the path"), std::string::npos) << d;
  }
  for (const char* d : {"https://blog.example.com/$1", "https://ex.test?$1", "https://ex.test#$1",
                        "$1", "$1/x", "/$1", "//ex.test/$1"}) {
    EXPECT_EQ(check_redirect_destination(d, 1), "") << d;
  }
  EXPECT_TRUE(is_redirect_status(308));
  EXPECT_FALSE(is_redirect_status(304));
  EXPECT_FALSE(is_redirect_status(200));
}

TEST(SiteRules, EveryMatchingHeaderRuleAppliesInFileOrder) {
  HeaderRules rules({header_rule("/**", "X-All", "1"),
                     header_rule("/assets/**", "Cache-Control", "immutable"),
                     header_rule("/**/*.html", "Cache-Control", "no-cache"),
                     header_rule("/none", "X-None", "1")});
  HeadBuffer h;
  rules.append_matching("/assets/app.css", 200, h);
  EXPECT_EQ(h.view(), "X-All: 1\r\nCache-Control: immutable\r\n");
  h.clear();
  rules.append_matching("/a/index.html", 304, h);
  EXPECT_EQ(h.view(), "X-All: 1\r\nCache-Control: no-cache\r\n");
}

TEST(SiteRules, HeaderRulesSkipErrorsUnlessAlways) {
  HeaderRules rules({header_rule("/**", "Cache-Control", "immutable"),
                     header_rule("/**", "X-Frame-Options", "DENY", /*always=*/true)});
  HeadBuffer h;
  rules.append_matching("/missing.js", 404, h);
  EXPECT_EQ(h.view(), "X-Frame-Options: DENY\r\n");
  for (int status : {200, 206, 301, 302, 303, 304, 307, 308}) {
    h.clear();
    rules.append_matching("/x", status, h);
    EXPECT_EQ(h.view(), "Cache-Control: immutable\r\nX-Frame-Options: DENY\r\n") << status;
  }
}

TEST(SiteRules, CompilingAnUncheckedRuleThrows) {
  const std::vector<HeaderRuleConfig> framing{header_rule("/x", "Content-Length", "1")};
  EXPECT_THROW(HeaderRules{framing}, ConfigError);
  const std::vector<HeaderRuleConfig> relative{header_rule("x", "X-A", "1")};
  EXPECT_THROW(HeaderRules{relative}, ConfigError);
  const std::vector<RedirectRuleConfig> bad{{"/a/*", "/b/$2", 301, ""}};
  EXPECT_THROW(RedirectRules{bad}, ConfigError);
}

TEST(SiteRules, FirstMatchingRedirectWinsWithEncodedCaptures) {
  const std::vector<RedirectRuleConfig> config{{"/old", "/assets/app.css", 301, ""},
                                               {"/blog/*/**", "https://news.test/$1/$2", 308, ""},
                                               {"/blog/**", "/never", 302, ""}};
  RedirectRules rules(config);
  std::string location;
  EXPECT_EQ(rules.find("/old", location), 301);
  EXPECT_EQ(location, "Location: /assets/app.css\r\n");
  EXPECT_EQ(rules.find("/blog/2024/a b/\r\n.html", location), 308);
  EXPECT_EQ(location, "Location: https://news.test/2024/a%20b/%0D%0A.html\r\n");
  EXPECT_EQ(rules.find("/older", location), 0);
  EXPECT_TRUE(RedirectRules{}.empty());
  // A capture starting with '/' behind a '/' makes one slash, never "//host".
  RedirectRules root({{"/go**", "/$1", 301, ""}});
  EXPECT_EQ(root.find("/go/evil.test", location), 301);
  EXPECT_EQ(location, "Location: /evil.test\r\n");
}

}  // namespace
}  // namespace weft::http
