#include "server/listing.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/path.hpp"

namespace weft::http {

namespace {

// The names in the open directory `dfd` (which this closes), each with whether it is a
// directory, sorted; false when it cannot be read.
bool read_names(int dfd, std::vector<std::pair<std::string, bool>>& names) {
  DIR* dir = ::fdopendir(dfd);
  if (!dir) {
    ::close(dfd);
    return false;
  }
  while (dirent* d = ::readdir(dir)) {
    std::string_view name = d->d_name;
    if (name == "." || name == "..") continue;
    // DT_UNKNOWN (some file systems): ask, without following a symlink (a link to a
    // directory is listed as the link it is).
    struct stat st {};
    bool is_dir = d->d_type == DT_DIR ||
                  (d->d_type == DT_UNKNOWN &&
                   ::fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode));
    names.emplace_back(std::string(name), is_dir);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return true;
}

}  // namespace

void append_html_escaped(std::string_view in, std::string& out) {
  for (char c : in) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
}

bool render_listing(const FdCache& files, std::string_view path, std::string& body) {
  int dfd = files.open_directory(path);
  if (dfd < 0) return false;
  std::vector<std::pair<std::string, bool>> names;  // name, is a directory
  if (!read_names(dfd, names)) return false;
  body.assign("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of ");
  append_html_escaped(path, body);
  body += "</title></head>\n<body><h1>Index of ";
  append_html_escaped(path, body);
  body += "</h1><ul>\n<li><a href=\"../\">../</a></li>\n";
  std::string href = "./";
  for (const auto& [name, is_dir] : names) {
    href.resize(2);
    append_encoded_path(name, href);
    if (is_dir) href += '/';
    body += "<li><a href=\"";
    append_html_escaped(href, body);
    body += "\">";
    append_html_escaped(name, body);
    if (is_dir) body += '/';
    body += "</a></li>\n";
  }
  body += "</ul></body></html>\n";
  return true;
}

}  // namespace weft::http
