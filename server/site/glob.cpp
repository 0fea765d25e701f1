// Glob patterns: compiled into token lists (one per expansion of the braces), matched by
// bounded backtracking.
#include "server/site/glob.hpp"

#include <fmt/core.h>

namespace weft::http {

namespace {

using Token = Glob::Token;
using Kind = Glob::Kind;

// One piece of a pattern before the braces are expanded: a token, or a {..} group.
struct Piece {
  Token token;
  std::vector<std::string> choices;  // a group's alternatives (token.capture set)
};

// Appends character `c` to the literal at the end of `pieces`, starting one when needed.
void append_char(std::vector<Piece>& pieces, char c) {
  if (pieces.empty() || pieces.back().token.kind != Kind::literal ||
      !pieces.back().choices.empty() || pieces.back().token.capture >= 0) {
    pieces.push_back({});
  }
  pieces.back().token.text.push_back(c);
}

// Reads the {..} group starting at pattern[i] (the '{'); returns its alternatives and moves
// `i` past the '}', or sets `error`.
std::vector<std::string> read_group(std::string_view pattern, std::size_t& i, std::string& error) {
  std::vector<std::string> choices(1);
  for (++i; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') {
      ++i;
      return choices;
    }
    if (c == ',') {
      choices.emplace_back();
    } else if (c == '\\' && i + 1 < pattern.size()) {
      choices.back().push_back(pattern[++i]);
    } else if (c == '*' || c == '?' || c == '{') {
      error = fmt::format("a {{..}} alternative must be plain text (found '{}' in it)", c);
      return {};
    } else {
      choices.back().push_back(c);
    }
  }
  error = "a '{' is not closed by a '}'";
  return {};
}

// Splits `pattern` into pieces, numbering the captures; returns false with `error` set.
bool read_pieces(std::string_view pattern, std::vector<Piece>& pieces, std::size_t& captures,
                 std::string& error) {
  std::size_t i = 0;
  while (i < pattern.size()) {
    const char c = pattern[i];
    Piece p;
    if (c == '\\') {
      if (i + 1 == pattern.size()) return error = "a '\\' ends the pattern", false;
      append_char(pieces, pattern[i + 1]);
      i += 2;
      continue;
    }
    if (c == '}' || c == ',') {
      if (c == '}') return error = "a '}' has no '{' before it", false;
      append_char(pieces, c);
      ++i;
      continue;
    }
    if (c == '{') {
      p.choices = read_group(pattern, i, error);
      if (!error.empty()) return false;
    } else if (c == '?') {
      p.token.kind = Kind::question;
      ++i;
    } else if (c == '*') {
      std::size_t n = 0;
      while (i < pattern.size() && pattern[i] == '*') ++i, ++n;
      if (n > 2) return error = "'***' is not a wildcard (use '*' or '**')", false;
      const bool at_segment = i - n == 0 || pattern[i - n - 1] == '/';
      p.token.kind = n == 1 ? Kind::star : Kind::any;
      if (n == 2 && at_segment && i < pattern.size() && pattern[i] == '/') {
        p.token.kind = Kind::segments;  // "**/": whole segments, the '/' with them
        ++i;
      }
    } else {
      append_char(pieces, c);
      ++i;
      continue;
    }
    if (captures == GlobCaptures::kMax) {
      return error =
                 fmt::format("has more than {} wildcards and {{..}} groups", GlobCaptures::kMax),
             false;
    }
    p.token.capture = static_cast<int>(captures++);
    pieces.push_back(std::move(p));
  }
  return true;
}

// Expands the groups of `pieces` into token lists, one per combination of their choices.
bool expand(const std::vector<Piece>& pieces, std::vector<std::vector<Token>>& out,
            std::string& error) {
  out.assign(1, {});
  for (const Piece& p : pieces) {
    if (p.choices.empty()) {
      for (auto& tokens : out) tokens.push_back(p.token);
      continue;
    }
    if (out.size() * p.choices.size() > Glob::kMaxAlternatives) {
      error =
          fmt::format("its {{..}} groups expand to more than {} patterns", Glob::kMaxAlternatives);
      return false;
    }
    std::vector<std::vector<Token>> next;
    for (const auto& tokens : out) {
      for (const std::string& choice : p.choices) {
        next.push_back(tokens);
        next.back().push_back({Kind::literal, choice, p.token.capture});
      }
    }
    out = std::move(next);
  }
  return true;
}

// One match in progress: the path, one expansion's tokens, the captures, the steps taken.
struct Matcher {
  std::string_view path;
  const std::vector<Token>& tokens;
  GlobCaptures* captures;
  std::size_t steps = 0;

  void capture(const Token& t, std::size_t at, std::size_t length) {
    if (captures && t.capture >= 0) {
      captures->spans[static_cast<std::size_t>(t.capture)] = {static_cast<uint32_t>(at),
                                                              static_cast<uint32_t>(length)};
    }
  }

  // Whether tokens[ti..] match path[pos..]; wildcards take the shortest run that lets the
  // rest match (so "/a/*" on "/a/b" captures "b", and "/**/x" tries zero segments first).
  bool from(std::size_t ti, std::size_t pos) {
    if (++steps > Glob::kMaxSteps) return false;
    if (ti == tokens.size()) return pos == path.size();
    const Token& t = tokens[ti];
    switch (t.kind) {
      case Kind::literal:
        if (path.compare(pos, t.text.size(), t.text) != 0) return false;
        if (!from(ti + 1, pos + t.text.size())) return false;
        capture(t, pos, t.text.size());
        return true;
      case Kind::question:
        if (pos == path.size() || path[pos] == '/' || !from(ti + 1, pos + 1)) return false;
        capture(t, pos, 1);
        return true;
      case Kind::star:
      case Kind::any:
        for (std::size_t end = pos;; ++end) {
          if (from(ti + 1, end)) {
            capture(t, pos, end - pos);
            return true;
          }
          if (end == path.size() || (t.kind == Kind::star && path[end] == '/')) return false;
          if (steps > Glob::kMaxSteps) return false;
        }
      case Kind::segments:
        for (std::size_t end = pos; end != std::string_view::npos;) {
          if (from(ti + 1, end)) {
            capture(t, pos, end - pos);
            return true;
          }
          if (steps > Glob::kMaxSteps) return false;
          end = path.find('/', end);
          if (end != std::string_view::npos) ++end;
        }
        return false;
    }
    return false;
  }
};

}  // namespace

std::optional<Glob> Glob::compile(std::string_view pattern, std::string& error) {
  error.clear();
  if (pattern.empty() || pattern.front() != '/') {
    error = "must start with '/' (it is matched against the request's path)";
    return std::nullopt;
  }
  for (char c : pattern) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      error = "must not hold control characters";
      return std::nullopt;
    }
  }
  Glob g;
  g.pattern_ = pattern;
  std::vector<Piece> pieces;
  if (!read_pieces(pattern, pieces, g.captures_, error)) return std::nullopt;
  if (!expand(pieces, g.alternatives_, error)) return std::nullopt;
  g.exact_ = g.captures_ == 0;
  return g;
}

bool Glob::match(std::string_view path, GlobCaptures* captures) const {
  for (const auto& tokens : alternatives_) {
    Matcher m{path, tokens, captures};
    if (m.from(0, 0)) {
      if (captures) captures->count = captures_;
      return true;
    }
  }
  return false;
}

}  // namespace weft::http
