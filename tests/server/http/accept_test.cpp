// Tests server/http/accept.cpp: a table of Accept values and the weights they give
// application/json and text/html (the two forms of a listing), a field on several lines.
#include "server/http/accept.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

struct Case {
  const char* note;
  std::vector<std::string> lines;  // none: the field is absent
  std::uint16_t json;
  std::uint16_t html;
};

const Case kCases[] = {
    {"absent: everything at q=1", {}, 1000, 1000},
    {"empty: as absent", {""}, 1000, 1000},
    {"*/*", {"*/*"}, 1000, 1000},
    {"json only", {"application/json"}, 1000, 0},
    {"without case", {"Application/JSON"}, 1000, 0},
    {"type/*", {"application/*"}, 1000, 0},
    {"text/*", {"text/*;q=0.4"}, 0, 400},
    {"weights", {"text/html;q=0.5, application/json"}, 1000, 500},
    {"the exact type beats type/*", {"application/*;q=0.1, application/json;q=0.9"}, 900, 0},
    {"and beats */* whatever the order", {"*/*;q=0.8, application/json;q=0.2"}, 200, 800},
    {"type/* beats */*", {"*/*;q=0.1, text/*;q=0.7"}, 100, 700},
    {"a refusal", {"application/json;q=0, */*"}, 0, 1000},
    {"the first of a tie counts", {"application/json;q=0.3, application/json"}, 300, 0},
    {"browser", {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, 800, 1000},
    {"parameters are ignored", {"application/json; charset=utf-8"}, 1000, 0},
    {"a parameter before q", {"application/json;v=2;q=0.6"}, 600, 0},
    {"accept-ext after q", {"application/json;q=0.6;x=1"}, 600, 0},
    {"Q without case", {"application/json;Q=0.25"}, 250, 0},
    {"whitespace", {" application/json ; q=0.5 ,\ttext/html "}, 500, 1000},
    {"a bad weight: skipped", {"application/json;q=2, text/html"}, 0, 1000},
    {"only bad elements: as absent", {"application/json;q=bogus"}, 1000, 1000},
    {"no slash: skipped", {"json, text/html"}, 0, 1000},
    {"*/json: skipped", {"*/json, text/html;q=0.1"}, 0, 100},
    {"not a token: skipped", {"appli(cation)/json, text/html"}, 0, 1000},
    {"a prefix is not a type", {"application/jsonx"}, 0, 0},
    {"several lines", {"text/html;q=0.2", "application/json"}, 1000, 200},
};

TEST(Accept, Table) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.note);
    std::vector<Header> headers;
    headers.push_back({"Host", "x", Field::host});
    for (const std::string& line : c.lines) {
      headers.push_back({"accept", line, Field::other});
      headers.push_back({"Accept-Language", "application/json", Field::other});  // never read
    }
    EXPECT_EQ(accept_weight(headers, "application/json"), c.json);
    EXPECT_EQ(accept_weight(headers, "text/html"), c.html);
  }
}

}  // namespace
}  // namespace weft::http
