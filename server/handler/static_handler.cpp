#include "server/handler/static_handler.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <iterator>
#include <optional>
#include <utility>
#include <variant>

#include <spdlog/spdlog.h>

#include "server/compress/compressor.hpp"
#include "server/core/processor.hpp"
#include "server/files/listing.hpp"
#include "server/handler/connection_work.hpp"
#include "server/http/accept_encoding.hpp"
#include "server/http/conditional.hpp"
#include "server/http/multipart.hpp"
#include "server/http/path.hpp"
#include "server/http/response.hpp"
#include "server/http/status.hpp"
#include "server/ops/log_throttle.hpp"
#include "server/site/site_context.hpp"
#include "server/site/site_rules.hpp"

namespace weft::http {

namespace {

// Room kept in a redirect's head for everything but its Location (status line, Server, Date,
// Content-Type, Content-Length, Connection): about 200 bytes with a short server_name.
constexpr std::size_t kHeadFieldsReserve = 512;

std::string_view query_of(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return {};
  auto f = target.find('#', q);
  return target.substr(q, f == std::string_view::npos ? std::string_view::npos : f - q);
}

// The first index file of the directory `work.path` that exists, or an error other than
// "not there" on one (EACCES on the index is reported, not skipped), or nothing.
FileRef find_index(const SiteContext& site, ConnectionWork& work) {
  const unsigned processor = processor_index();
  for (const std::string& index : site.index) {
    work.scratch.assign(work.path).append(index);
    FileRef candidate = site.files->lookup(work.scratch, processor);
    if (!candidate->error && !candidate->directory) return candidate;
    if (candidate->error && candidate->error != ENOENT && candidate->error != ENOTDIR) {
      return candidate;
    }
  }
  return {};
}

// What a directory answers with: a Reply (a redirect, a listing, an error), or its index
// file, which is then answered as any file.
struct IndexFile {
  FileRef file;
};
using DirectoryAnswer = std::variant<Reply, IndexFile>;

// A directory: redirect to its name with a slash, or its index file, or its listing.
DirectoryAnswer directory_reply(const SiteContext& site, const Request& req, ConnectionWork& work) {
  if (!names_directory(work.path)) {
    work.scratch.assign("Location: ");
    append_encoded_path(work.path, work.scratch);
    work.scratch.append("/").append(query_of(req.target())).append("\r\n");
    // The Location repeats the target (encoded, with its query): one too long for the head
    // buffer, beside the other fields, is refused as a target too long to redirect.
    if (work.scratch.size() > HeadBuffer::kCapacity - kHeadFieldsReserve - kMaxRuleFieldBytes) {
      return Reply::error_page(414);
    }
    return Reply::error_page(301, work.scratch);
  }
  if (FileRef index = find_index(site, work)) return IndexFile{std::move(index)};
  if (!site.directory_listing) return Reply::error_page(403);
  const ListingOptions options{.order = parse_listing_order(query_of(req.target())),
                               .format = listing_format(req.headers()),
                               .max_entries = site.max_listing_entries};
  if (!render_listing(*site.files, work.path, options, work.body)) return Reply::error_page(403);
  Reply r = page_reply(options.format == ListingFormat::json ? kListingJsonType : kListingHtmlType);
  r.extra = "Vary: Accept\r\n";  // the one URL has two forms
  return r;
}

// What a found file is answered with: the file itself, a precompressed variant of it, or a
// representation compressed on the fly.
struct Representation {
  FileRef file;                   // the file whose bytes are sent
  std::string_view etag;          // the entity-tag preconditions compare with
  std::string_view content_type;  // a coding: the original's; else empty (the file's own)
  std::string_view encoding;      // a coding: its name; else empty
  std::string_view validators;    // a coding: its validator fields; else empty (the file's)
  bool vary = false;              // the answer depends on Accept-Encoding
  bool not_acceptable = false;    // the client refuses identity and no coding can be sent: 406
  Compressor* compressed_by = nullptr;  // compressed on the fly: the compressor to count it in
  uint64_t identity_size = 0;           // of a coding: the file's own size
};

// A coding weft sends precompressed: its file's suffix, and the suffix its entity-tag gets
// (not hex: no identity tag can equal it; "+..." for those compressed on the fly).
struct PrecompressedCoding {
  std::string_view file_suffix;
  std::string_view tag_suffix;
};
// By ContentCoding.
constexpr PrecompressedCoding kPrecompressed[kContentCodings] = {
    {".zst", "-zst"}, {".br", "-br"}, {".gz", "-gz"}};
// The order of precompressed variants a client weighs equally.
constexpr ContentCoding kPrecompressedOrder[] = {ContentCoding::zstd, ContentCoding::br,
                                                 ContentCoding::gzip};

// Returns the variant of `file` for `c` when it is a regular file next to it, else nothing:
// an absent, unreadable or odd variant means the file itself is sent, never an error.
FileRef find_variant(const SiteContext& site, ConnectionWork& work, const FileEntry& file,
                     const PrecompressedCoding& c) {
  work.scratch.assign(file.path).append(c.file_suffix);
  FileRef v = site.files->lookup(work.scratch, processor_index());
  if (v->error || v->directory) return {};
  return v;
}

// Sets `rep` to a precompressed variant of `file` (server.precompressed; see the header), the
// accepted coding of higher weight first, zstd, br, gzip on a tie; returns whether one exists.
bool choose_precompressed(const SiteContext& site, ConnectionWork& work, CodingWeights w,
                          const FileRef& file, Representation& rep) {
  // "always": gzip for every client that does not refuse it (q=0, RFC 9110 §12.5.3),
  // below any weight one can give (so after its br).
  if (site.precompressed == Precompressed::always && w.gzip == 0 && !w.gzip_refused) w.gzip = 1;
  const RankedCodings ranked = rank_codings(w, kPrecompressedOrder);
  for (std::size_t i = 0; i < ranked.count; ++i) {
    const ContentCoding c = ranked.codings[i];
    const PrecompressedCoding& pc = kPrecompressed[static_cast<int>(c)];
    FileRef v = find_variant(site, work, *file, pc);
    if (!v) continue;
    // RFC 9659: a zstd frame asking for a window above 8 MiB is not sent (logged).
    if (c == ContentCoding::zstd && !(site.compressor && site.compressor->zstd_variant_ok(*v))) {
      continue;
    }
    rep.content_type = file->content_type;
    rep.encoding = coding_name(c);
    rep.etag =
        variant_validators(work.fields, v->fields.validators(), v->etag.view(), pc.tag_suffix);
    rep.validators = work.fields;
    rep.file = std::move(v);
    return true;
  }
  return false;
}

// What choose_on_the_fly() found besides a representation: whether the client accepts a
// coding that is, or is being, made, and the coding being made for it, if any.
struct OnTheFly {
  bool acceptable = false;
  std::optional<ContentCoding> pending;
};

// Sets `rep` to the representation of `file` compressed on the fly that is cached in the
// accepted coding of higher weight: of several of equal weight, the smallest made
// (compression.prefer_smallest) or the first in the server's order. Starts the compression of
// the best coding not made yet, one per request (compressor.hpp: never waits).
OnTheFly choose_on_the_fly(const SiteContext& site, Compressor& comp, const CodingWeights& w,
                           const FileRef& file, Representation& rep) {
  const RankedCodings ranked = rank_codings(w, comp.codecs());
  // A file modified within this second may still be written: served, never compressed yet.
  bool start = file->mtime_strong;
  OnTheFly found;
  FileRef best;
  ContentCoding best_coding{};
  for (std::size_t i = 0; i < ranked.count; ++i) {
    const ContentCoding c = ranked.codings[i];
    // A made coding wins over those of lower weight; of equal weight, only a smaller one.
    if (best && (!comp.prefer_smallest() || w.weight(c) < w.weight(best_coding))) break;
    FileRef out;
    switch (comp.find(site.files.get(), file, c, start, out)) {
      case Compressor::Outcome::ready:
        if (!best || out->size < best->size) {
          best = std::move(out);
          best_coding = c;
        }
        break;
      case Compressor::Outcome::started:
      case Compressor::Outcome::pending:
        if (!found.pending) found.pending = c;
        [[fallthrough]];
      case Compressor::Outcome::not_started:
        found.acceptable = true;
        start = false;  // one compression per request: the best coding's
        break;
      case Compressor::Outcome::useless:
        break;
    }
  }
  if (best) {
    rep.content_type = file->content_type;
    rep.encoding = coding_name(best_coding);
    rep.etag = best->etag.view();
    rep.validators = best->fields.validators();
    rep.compressed_by = &comp;
    rep.identity_size = file->size;
    rep.file = std::move(best);
  } else if (ranked.count > 0) {
    comp.on_miss();
  }
  return found;
}

// Chooses between `file`, its precompressed variants and its representations compressed on
// the fly ([compression]): a precompressed variant first (the operator made it), then a
// cached representation, then identity; 406 only for a compressible file whose client
// refuses identity and accepts no coding that can be made.
Representation choose_representation(const SiteContext& site, const Request& req,
                                     ConnectionWork& work, FileRef file) {
  Representation rep;
  Compressor* comp =
      site.compressor && site.compressor->eligible(*file) ? site.compressor : nullptr;
  if (site.precompressed != Precompressed::off || comp) {
    rep.vary = true;
    const CodingWeights w = parse_accept_encoding(req.accept_encoding());
    if (site.precompressed != Precompressed::off &&
        choose_precompressed(site, work, w, file, rep)) {
      return rep;
    }
    if (comp) {
      OnTheFly fly = choose_on_the_fly(site, *comp, w, file, rep);
      if (rep.file) return rep;
      if (w.identity_refused && fly.pending) {
        // The one request that waits for a compression (its fiber, never its processor):
        // its client takes no identity, and the coding it takes is being made.
        comp->wait_pending(site.files.get(), file, *fly.pending);
        fly = choose_on_the_fly(site, *comp, w, file, rep);
        if (rep.file) return rep;
      }
      rep.not_acceptable = w.identity_refused && !fly.acceptable;
    }
  }
  rep.etag = file->etag.view();
  rep.file = std::move(file);
  return rep;
}

// Turns `r` (200, the whole file) into the answer to its Range: 206 for one range or for a
// multipart body of several, 416 (returned) for none that is satisfiable; returns nothing
// when `r` stands.
std::optional<Reply> apply_range(const SiteContext& site, std::string_view range,
                                 ConnectionWork& work, Reply& r) {
  const FileEntry& file = *r.file;
  r.range = parse_range(range, file.size, site.max_ranges, work.ranges);
  switch (r.range.kind) {
    case RangeResult::Kind::none:
      break;
    case RangeResult::Kind::unsatisfiable: {
      ContentRangeBuffer cr;
      work.scratch.assign("Content-Range: ")
          .append(format_content_range(r.range, cr))
          .append("\r\n")
          .append(r.vary ? kVaryLine : "");
      return Reply::error_page(416, work.scratch);
    }
    case RangeResult::Kind::single:
      r.status = 206;
      r.offset = r.range.offset;
      r.length = r.range.length;
      break;
    case RangeResult::Kind::multi: {
      // A variant's parts could not say they are encoded: the whole variant. A type too
      // long for a part's head: the whole file. (A server may ignore any Range.)
      const std::string_view boundary = make_boundary(work.boundary);
      auto length = multipart_length(boundary, file.content_type, r.range.parts, file.size);
      if (!r.encoding.empty() || !length) {
        r.range = {};
        break;
      }
      r.status = 206;
      r.length = *length;
      r.boundary = boundary;
      break;
    }
  }
  return std::nullopt;
}

// A found file (or its variant): preconditions, then ranges.
Reply file_reply(const SiteContext& site, const Request& req, ConnectionWork& work,
                 Representation rep) {
  if (rep.not_acceptable) return Reply::error_page(406, kVaryLine);
  int64_t now_s = static_cast<int64_t>(std::time(nullptr));
  Validators v{rep.etag, rep.file->mtime, rep.file->mtime_strong};
  Reply r;
  r.kind = Reply::Kind::file;
  r.status = 200;
  r.length = rep.file->size;
  r.vary = rep.vary;
  if (!rep.encoding.empty()) {
    r.content_type = rep.content_type;
    r.encoding = rep.encoding;
    r.validators = rep.validators;
  }
  switch (evaluate_preconditions(Preconditions::of(req), v, req.method(), now_s)) {
    case Precondition::not_modified:
      r.kind = Reply::Kind::not_modified;
      r.status = 304;
      r.length = 0;
      r.file = std::move(rep.file);
      return r;
    case Precondition::failed:
      return Reply::error_page(412, r.vary ? kVaryLine : "");
    case Precondition::proceed:
      break;
  }
  if (rep.compressed_by) {
    // Bytes saved: the whole body's, for a whole body sent (not a HEAD or a range).
    const bool whole = req.method() == Method::get && !req.range();
    rep.compressed_by->on_sent(whole ? rep.identity_size - rep.file->size : 0);
  }
  r.file = std::move(rep.file);
  if (auto range = req.range(); range && if_range_allows(req.if_range(), v, now_s)) {
    if (auto answer = apply_range(site, *range, work, r)) return *answer;
  }
  return r;
}

// One error-log line for a lookup that failed, at most ten a second per level from info up:
// a client can ask for a refused symlink or an unreadable file on every request.
void log_lookup_error(const ErrnoStatus& es, std::string_view peer, const Request& req,
                      std::string_view path, int err) {
  static LogThrottle throttles[] = {LogThrottle{10}, LogThrottle{10}, LogThrottle{10},
                                    LogThrottle{10}, LogThrottle{10}, LogThrottle{10},
                                    LogThrottle{10}};
  static_assert(std::size(throttles) == spdlog::level::n_levels);
  if (es.level < spdlog::level::info) {  // debugging: every line, as asked for
    spdlog::log(es.level, "{}: {} {:?}: {}", peer, req.method_text(), path, std::strerror(err));
    return;
  }
  // The path is decoded client input: quoted and escaped ("{:?}"), so that a "%0a" in it
  // cannot start a forged line in the error log.
  throttles[static_cast<std::size_t>(es.level)].log(es.level, "{}: {} {:?}: {}", peer,
                                                    req.method_text(), path, std::strerror(err));
}

// A redirect rule's answer for `work.path`, if one matches: its status with the Location.
std::optional<Reply> redirect_reply(const SiteContext& site, ConnectionWork& work) {
  const int status = site.redirects.find(work.path, work.scratch);
  if (status == 0) return std::nullopt;
  // Captures make the Location as long as the path, encoded: as for a directory's redirect.
  if (work.scratch.size() > HeadBuffer::kCapacity - kHeadFieldsReserve - kMaxRuleFieldBytes) {
    return Reply::error_page(414);
  }
  return Reply::error_page(status, work.scratch);
}

// The fallback page (server.fallback_page) for a path that names nothing, as NGINX's
// `try_files $uri $uri/ /index.html`: the page with status 200, preconditions and ranges as
// for any file. Nothing when there is none or it is missing itself (the 404 stands).
std::optional<Reply> fallback_reply(const SiteContext& site, const Request& req,
                                    ConnectionWork& work, int error) {
  if (site.pages.fallback.empty() || (error != ENOENT && error != ENOTDIR)) return std::nullopt;
  FileRef page = site.files->lookup(site.pages.fallback, processor_index());
  if (page->error || page->directory) return std::nullopt;
  Reply r = file_reply(site, req, work, choose_representation(site, req, work, std::move(page)));
  r.page_path = site.pages.fallback;  // its [[headers]], not the path's (Reply::page_path)
  return r;
}

// Replaces a built-in error page by the site's own for its status (server.error_pages),
// keeping the status and the reply's fields; a page that is missing, or a directory, leaves
// the built-in one: an error page never leads to another lookup, so it cannot loop.
Reply with_error_page(const SiteContext& site, Reply r) {
  if (r.kind != Reply::Kind::error || r.status < 400 || site.pages.error_pages.empty()) return r;
  const std::string_view path = site.error_page(r.status);
  if (path.empty()) return r;
  FileRef page = site.files->lookup(path, processor_index());
  if (page->error || page->directory) return r;
  r.kind = Reply::Kind::error_file;
  r.length = page->size;
  r.file = std::move(page);
  r.page_path = path;  // its [[headers]], not the path's (Reply::page_path)
  return r;
}

// The answer of `site` to `req`, before its error page.
Reply site_reply(const SiteContext& site, const Request& req, ConnectionWork& work,
                 std::string_view peer) {
  if (!site.redirects.empty()) {
    if (auto r = redirect_reply(site, work)) return *r;
  }
  if (req.method() != Method::get && req.method() != Method::head) return method_reply(req);
  FileRef file = site.files->lookup(work.path, processor_index());
  if (!file->error && !file->directory && names_directory(work.path)) {
    // A trailing "/" names a directory (path.hpp), but the cache opens the name without it:
    // answer a file there as open(2) would have, ENOTDIR, rather than serve it.
    if (auto r = fallback_reply(site, req, work, ENOTDIR)) return *r;
    return Reply::error_page(status_from_errno(ENOTDIR).status);
  }
  if (file->directory) {
    DirectoryAnswer answer = directory_reply(site, req, work);
    if (auto* r = std::get_if<Reply>(&answer)) return *r;  // a redirect, a listing, an error
    file = std::move(std::get<IndexFile>(answer).file);
  }
  if (file->error) {
    if (auto r = fallback_reply(site, req, work, file->error)) return *r;
    ErrnoStatus es = status_from_errno(file->error);
    log_lookup_error(es, peer, req, work.path, file->error);
    return Reply::error_page(es.status);
  }
  return file_reply(site, req, work, choose_representation(site, req, work, std::move(file)));
}

}  // namespace

Reply method_reply(const Request& req) {
  if (req.method() == Method::options) {
    Reply r;
    r.kind = Reply::Kind::options;
    r.status = 200;
    return r;
  }
  static const std::string kAllowLine = "Allow: " + std::string(kAllowedMethods) + "\r\n";
  return Reply::error_page(405, kAllowLine);
}

Reply handle_static(const SiteContext& site, const Request& req, ConnectionWork& work,
                    std::string_view peer) {
  const bool read = req.method() == Method::get || req.method() == Method::head;
  Reply r;
  if (TargetStatus ts = normalize_target(req.target(), work.path); ts != TargetStatus::ok) {
    // Not a path (OPTIONS "*" among them): no rule can match it.
    r = read ? Reply::error_page(http_status(ts)) : method_reply(req);
  } else {
    r = site_reply(site, req, work, peer);
    if (!site.headers.empty()) r.headers = &site.headers;  // matched on work.path when written
  }
  r = with_error_page(site, std::move(r));
  r.site = site.number;
  return r;
}

}  // namespace weft::http
