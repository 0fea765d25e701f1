"""Directory listings with a real client: sizes, dates, directories first, sorting by the
query string, JSON by Accept (q-values, Vary), hostile names in both formats, HEAD,
conditionals, and limits.max_listing_entries with its truncation marker."""

import html.parser
import json
import os
import re
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import ServerCase, per_backend  # noqa: E402

T0 = 1700000000  # 2023-11-14 22:13:20 UTC

# /sorted/: name -> (kind, size, mtime offset); sizes and dates all distinct.
SORTED = {
    "alpha.txt": ("file", 10, 300),
    "Beta.txt": ("file", 2000, 100),
    "gamma.bin": ("file", 3 * 1024 * 1024 + 5, 200),
    "empty": ("file", 0, 400),
    "zdir": ("directory", None, 50),
    "adir": ("directory", None, 500),
    "link": ("symlink", None, 250),  # -> alpha.txt, inside the root
}

# /odd/: names that must break neither format (bytes: one of them is not UTF-8).
ODD = [b'a"b', b"<x>", b"sp ace", b"new\nline", b"tab\tx", b"back\\slash", b"it's",
       "h\u00e9llo".encode(), b"\xff\xfe.bin", b"javascript:alert(1)", b"%41", b"&amp;",
       b"ctl\x01\x1f\x7f"]


def make_tree(root):
    d = os.path.join(root, "sorted")
    os.makedirs(d)
    for name, (kind, size, dt) in SORTED.items():
        p = os.path.join(d, name)
        if kind == "file":
            with open(p, "wb") as f:
                f.write(b"x" * size)
        elif kind == "directory":
            os.mkdir(p)
        else:
            os.symlink("alpha.txt", p)
        os.utime(p, (T0 + dt, T0 + dt), follow_symlinks=False)
    odd = os.path.join(root, "odd").encode()
    os.makedirs(odd)
    for name in ODD:
        with open(os.path.join(odd, name), "wb") as f:
            f.write(b"odd")
    many = os.path.join(root, "many")
    os.makedirs(many)
    for i in range(10):
        open(os.path.join(many, "f%02d" % i), "w").close()
    return root


class Links(html.parser.HTMLParser):
    """Collects (href, text) of every <a> in a page, decoding character references."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links, self._href, self._text = [], None, ""

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href, self._text = dict(attrs).get("href"), ""

    def handle_data(self, data):
        if self._href is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            self.links.append((self._href, self._text))
            self._href = None


def entry_links(body):
    """The (href, text) of the entries of an HTML listing: not the column headers' sort
    links, not the parent's."""
    p = Links()
    p.feed(body.decode("utf-8"))
    return [(h, t) for h, t in p.links if h.startswith("./")]


def expected_order(key, descending):
    """The names of /sorted/ in the order weft lists them: directories first, each group by
    `key` (directories by name when the key is size), ties by name."""
    def sort_key(name):
        kind, size, dt = SORTED[name]
        if key == "size" and kind != "directory":
            return size if kind == "file" else 0
        if key == "date":
            return dt
        return name.encode()
    out = []
    for group in (["adir", "zdir"], [n for n in SORTED if SORTED[n][0] != "directory"]):
        out += sorted(sorted(group, key=lambda n: n.encode()), key=sort_key, reverse=descending)
    return out


class Listing:
    settings = {"server": {"directory_listing": True}}

    @classmethod
    def make_root(cls, base):
        return make_tree(os.path.join(base, "root"))

    def get(self, path, accept=None, method="GET"):
        r, body = self.srv.get(path, {"Accept": accept} if accept else {}, method)
        self.assertEqual(r.status, 200, (path, body[:300]))
        return r, body

    def json_of(self, path, accept="application/json"):
        r, body = self.get(path, accept)
        self.assertEqual(r.getheader("Content-Type"), "application/json")
        self.assertEqual(r.getheader("Vary"), "Accept")
        return json.loads(body.decode("utf-8"))  # strict: valid UTF-8, valid JSON

    def test_html_has_sizes_dates_and_directories_first(self):
        r, body = self.get("/sorted/")
        self.assertEqual(r.getheader("Content-Type"), "text/html; charset=utf-8")
        self.assertEqual(r.getheader("Vary"), "Accept")
        self.assertEqual([t for _, t in entry_links(body)],
                         ["adir/", "zdir/", "Beta.txt", "alpha.txt", "empty", "gamma.bin",
                          "link"])  # byte order, as NGINX: upper case first
        text = body.decode()
        for name, size_text in (("alpha.txt", "10"), ("Beta.txt", "2.0K"), ("empty", "0"),
                                ("gamma.bin", "3.0M")):
            kind, size, dt = SORTED[name]
            date = time.strftime("%Y-%m-%d %H:%M", time.gmtime(T0 + dt))
            row = re.search(r'<a href="\./%s">[^<]*</a></td><td([^>]*)>([^<]*)</td><td>'
                            r'<time datetime="([^"]*)">([^<]*)</time>' % re.escape(name), text)
            self.assertIsNotNone(row, (name, text))
            self.assertEqual(row.group(1), ' title="%d"' % size)
            self.assertEqual(row.group(2), size_text)
            self.assertEqual(row.group(3), time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                         time.gmtime(T0 + dt)))
            self.assertEqual(row.group(4), date)
        # Directories and links show no size.
        self.assertRegex(text, r'<a href="\./adir/">adir/</a></td><td>-</td>')
        self.assertRegex(text, r'<a href="\./link">link</a></td><td>-</td>')
        self.assertIn('<a href="../">../</a>', text)

    def test_sort_orders_html_and_json(self):
        for key in ("name", "size", "date"):
            for order in ("asc", "desc"):
                with self.subTest(key=key, order=order):
                    want = expected_order(key, order == "desc")
                    q = "/sorted/?sort=%s&order=%s" % (key, order)
                    _, body = self.get(q)
                    got = [t.rstrip("/") for _, t in entry_links(body)]
                    self.assertEqual(got, want)
                    doc = self.json_of(q)
                    self.assertEqual([e["name"] for e in doc["entries"]], want)

    def test_unknown_sort_values_fall_back_to_name_ascending(self):
        want = expected_order("name", False)
        for q in ("?sort=bogus", "?order=up", "?sort=SIZE&order=DESC", "?sort=&order=",
                  "?sort", "?x=1&&sort=%73ize", "?sort=size;order=desc"):
            with self.subTest(q=q):
                _, body = self.get("/sorted/" + q)
                self.assertEqual([t.rstrip("/") for _, t in entry_links(body)], want)
        # One known value and one unknown: the known one counts.
        _, body = self.get("/sorted/?sort=size&order=sideways")
        self.assertEqual([t.rstrip("/") for _, t in entry_links(body)],
                         expected_order("size", False))

    def test_column_headers_link_to_the_other_orders(self):
        _, body = self.get("/sorted/")
        p = Links()
        p.feed(body.decode())
        heads = [h for h, _ in p.links if h.startswith("?")]
        # Sorted by name ascending: Name links to descending, the others to ascending.
        self.assertEqual(heads, ["?sort=name&order=desc", "?sort=size&order=asc",
                                 "?sort=date&order=asc"])
        _, body = self.get("/sorted/?sort=date&order=asc")
        p = Links()
        p.feed(body.decode())
        self.assertIn("?sort=date&order=desc", [h for h, _ in p.links])

    def test_json_entries(self):
        doc = self.json_of("/sorted/")
        self.assertEqual(doc["path"], "/sorted/")
        self.assertIs(doc["truncated"], False)
        by_name = {e["name"]: e for e in doc["entries"]}
        self.assertEqual(set(by_name), set(SORTED))
        for name, (kind, size, dt) in SORTED.items():
            e = by_name[name]
            self.assertEqual(e["type"], kind, e)
            self.assertEqual(e["mtime"], time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                       time.gmtime(T0 + dt)), e)
            if kind == "file":
                self.assertEqual(e["size"], size, e)
            else:
                self.assertNotIn("size", e)
            self.assertEqual(e["href"], "./" + name + ("/" if kind == "directory" else ""))

    def test_content_negotiation(self):
        for accept, want in ((None, "text/html"), ("*/*", "text/html"),
                             ("application/json", "application/json"),
                             ("APPLICATION/JSON", "application/json"),
                             ("application/*", "application/json"),
                             ("text/html;q=0.5, application/json", "application/json"),
                             ("application/json;q=0.5, text/html", "text/html"),
                             ("application/json, */*;q=0.1", "application/json"),
                             ("application/json;q=0", "text/html"),
                             ("application/json; charset=utf-8", "application/json"),
                             ("text/*;q=0.3, application/json;q=0.3", "text/html"),
                             ("text/html,application/xhtml+xml,application/xml;q=0.9,"
                              "*/*;q=0.8", "text/html"),
                             ("image/png", "text/html"),
                             ("application/json;q=bogus", "text/html")):
            with self.subTest(accept=accept):
                r, body = self.get("/sorted/", accept)
                self.assertEqual(r.getheader("Content-Type").split(";")[0], want)
                self.assertEqual(r.getheader("Vary"), "Accept")
                if want == "application/json":
                    json.loads(body)
        # Accept on two lines is one list.
        r = self.srv.exchange(b"GET /sorted/ HTTP/1.1\r\nHost: x\r\nAccept: text/html;q=0.2\r\n"
                              b"Accept: application/json\r\n\r\n")[0]
        self.assertEqual(r.header("Content-Type"), "application/json")

    def test_odd_names_in_html(self):
        _, body = self.get("/odd/")
        links = entry_links(body)
        self.assertEqual(len(links), len(ODD), links)
        text = body.decode("utf-8")
        self.assertNotIn("<x>", text)
        self.assertNotIn('a"b', text)
        self.assertNotIn("href=\"javascript", text)
        # Each link leads to its own file, and the text shows the name (invalid UTF-8 and
        # control characters as U+FFFD).
        shown = {t for _, t in links}
        self.assertIn("h\u00e9llo", shown)
        self.assertIn("\ufffd\ufffd.bin", shown)
        self.assertIn("ctl\ufffd\ufffd\ufffd", shown)
        self.assertIn('a"b', shown)
        for href, _ in links:
            with self.subTest(href=href):
                # (not urljoin: it drops a last segment's ";..." after "./")
                r, b = self.srv.get("/odd/" + href[2:])
                self.assertEqual((r.status, b), (200, b"odd"))
        self.assertEqual(sorted(urllib.parse.unquote_to_bytes(h[2:]) for h, _ in links),
                         sorted(ODD))

    def test_odd_names_in_json(self):
        doc = self.json_of("/odd/")
        names = {e["name"] for e in doc["entries"]}
        for name in ODD:
            try:
                self.assertIn(name.decode("utf-8"), names)  # exact, control bytes included
            except UnicodeDecodeError:
                self.assertIn("\ufffd\ufffd.bin", names)
        self.assertEqual(sorted(urllib.parse.unquote_to_bytes(e["href"][2:])
                                for e in doc["entries"]), sorted(ODD))
        # Markup bytes never appear raw, even inside a JSON string.
        _, body = self.get("/odd/", "application/json")
        self.assertNotIn(b"<x>", body)

    def test_head_has_the_get_headers_without_a_body(self):
        for accept in (None, "application/json"):
            with self.subTest(accept=accept):
                g, gbody = self.get("/sorted/", accept)
                h, hbody = self.get("/sorted/", accept, method="HEAD")
                self.assertEqual(hbody, b"")
                for field in ("Content-Type", "Content-Length", "Vary"):
                    self.assertEqual(h.getheader(field), g.getheader(field), field)
                self.assertEqual(int(h.getheader("Content-Length")), len(gbody))
        # On the wire: no body bytes, so the pipelined GET after it parses cleanly.
        head, get = self.srv.exchange(b"HEAD /sorted/ HTTP/1.1\r\nHost: x\r\n\r\n"
                                      b"GET /sorted/alpha.txt HTTP/1.1\r\nHost: x\r\n\r\n",
                                      ("HEAD", "GET"))
        self.assertEqual(head.status, 200)
        self.assertEqual((get.status, get.body), (200, b"x" * 10))

    def test_conditionals_and_ranges_get_the_whole_listing(self):
        # As before: a listing carries no validators, so preconditions and Range do not
        # apply to it (a listing changes with its entries' sizes and dates, which the
        # directory's own mtime does not follow).
        _, full = self.get("/sorted/")
        for headers in ({"If-None-Match": "*"}, {"If-Modified-Since": "Sun, 01 Jan 2090 "
                                                                      "00:00:00 GMT"},
                        {"If-Match": '"x"'}, {"Range": "bytes=0-9"}):
            with self.subTest(headers=headers):
                r, body = self.srv.get("/sorted/", headers)
                self.assertEqual((r.status, body), (200, full))
                self.assertIsNone(r.getheader("ETag"))
                self.assertIsNone(r.getheader("Last-Modified"))

    def test_default_bound_is_ten_thousand_entries(self):
        d = os.path.join(self.root, "huge")
        if not os.path.isdir(d):
            os.mkdir(d)
            for i in range(10001):
                os.close(os.open(os.path.join(d, "f%05d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
        r, body = self.get("/huge/")
        self.assertEqual(body.count(b'<tr><td><a href="./f'), 10000)
        self.assertIn(b'<p class="truncated">', body)
        doc = self.json_of("/huge/?sort=date&order=desc")
        self.assertEqual((len(doc["entries"]), doc["truncated"]), (10000, True))


class TruncatedListing:
    settings = {"server": {"directory_listing": True}, "limits": {"max_listing_entries": 7}}

    @classmethod
    def make_root(cls, base):
        return make_tree(os.path.join(base, "root"))

    def test_both_formats_say_they_are_cut(self):
        r, body = self.srv.get("/many/")
        self.assertEqual(r.status, 200)
        self.assertEqual(len(entry_links(body)), 7)
        self.assertIn(b'<p class="truncated">', body)
        r, body = self.srv.get("/many/", {"Accept": "application/json"})
        doc = json.loads(body)
        self.assertEqual((len(doc["entries"]), doc["truncated"]), (7, True))
        # A directory of exactly the limit (/sorted/ has 7 entries) is whole, and says so.
        r, body = self.srv.get("/sorted/?sort=size", {"Accept": "application/json"})
        doc = json.loads(body)
        self.assertEqual((len(doc["entries"]), doc["truncated"]), (7, False))
        r, body = self.srv.get("/sorted/")
        self.assertNotIn(b'class="truncated"', body)
        r, body = self.srv.get("/odd/")  # 13 entries: cut too
        self.assertEqual(len(entry_links(body)), 7)


per_backend(globals(), Listing, TruncatedListing)

if __name__ == "__main__":
    unittest.main()
