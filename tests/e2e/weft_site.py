"""Builds the document root the server e2e tests serve: files of known content and sizes.

build(base) makes, under the folder `base`:

    base/canary.txt           CANARY: outside the root, reachable by no request, ever
    base/outside/target.txt   OUTSIDE: the target of the links that leave the root
    base/root/                the document root:
      hello.txt               b"hello world\\n" (text/plain)
      index.html, style.css, data.json, song.flac (type only from /etc/mime.types),
      blob.unknownext, noext  (application/octet-stream), empty.txt (0 bytes)
      medium.bin              MEDIUM: 200 KiB pattern, larger than the fd cache's in-memory
                              files, so it goes out through io.body
      big.bin                 100 MiB, sparse, with MARKS (offset -> bytes) written into it
      dir/index.html, dir/sub/deep.txt, "a b/index.html"
      noindex/file.txt        a directory without an index file
      in-link -> hello.txt, dir-link -> dir, out-link -> ../outside/target.txt,
      out-dir-link -> ../outside
      secret.txt              mode 000 (unreadable, unless the tests run as root)
      fifo                    a FIFO
      sock                    a Unix socket (403: looked at before any open)
Every regular file's mtime is MTIME, so Last-Modified and ETags are known.
"""

import os
import socket

MTIME = 1577934245  # Thu, 02 Jan 2020 03:04:05 GMT
HELLO = b"hello world\n"
INDEX = b"<!DOCTYPE html><title>root</title>\n"
DIR_INDEX = b"<h1>dir index</h1>\n"
DEEP = b"deep down\n"
OUTSIDE = b"OUTSIDE-TARGET-5f1c\n"
CANARY = b"CANARY-7d3e9b41-never-served"
MEDIUM = bytes((i * 7 + i // 251) & 0xFF for i in range(200 * 1024))
BIG_SIZE = 100 * 1024 * 1024
MARKS = {0: b"BIG-START-" + bytes(range(256)),
         50 * 1024 * 1024 + 3: b"BIG-MIDDLE-" + bytes(range(255, -1, -1)),
         BIG_SIZE - 16: b"BIG-END-0123456."}
FILES = {
    "hello.txt": HELLO,
    "index.html": INDEX,
    "style.css": b"body { color: #333; }\n",
    "data.json": b'{"a": 1}\n',
    "song.flac": b"fLaC-not-really\n",
    "blob.unknownext": b"\x00\x01binary\n",
    "noext": b"no extension\n",
    "empty.txt": b"",
    "medium.bin": MEDIUM,
    "dir/index.html": DIR_INDEX,
    "dir/sub/deep.txt": DEEP,
    "a b/index.html": b"spaced\n",
    "noindex/file.txt": b"not an index\n",
    "secret.txt": b"secret\n",
}


def big_bytes(offset, length):
    """Returns bytes [offset, offset+length) of big.bin."""
    out = bytearray(length)
    for at, data in MARKS.items():
        lo, hi = max(at, offset), min(at + len(data), offset + length)
        if lo < hi:
            out[lo - offset:hi - offset] = data[lo - at:hi - at]
    return bytes(out)


def build(base):
    """Builds the files described above under `base`; returns the document root."""
    root = os.path.join(base, "root")
    os.makedirs(os.path.join(base, "outside"))
    with open(os.path.join(base, "canary.txt"), "wb") as f:
        f.write(CANARY)
    with open(os.path.join(base, "outside", "target.txt"), "wb") as f:
        f.write(OUTSIDE)
    for name, data in FILES.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.truncate(BIG_SIZE)
        for at, data in MARKS.items():
            f.seek(at)
            f.write(data)
    for name in list(FILES) + ["big.bin"]:
        os.utime(os.path.join(root, name), (MTIME, MTIME))
    os.chmod(os.path.join(root, "secret.txt"), 0)
    os.symlink("hello.txt", os.path.join(root, "in-link"))
    os.symlink("dir", os.path.join(root, "dir-link"))
    os.symlink("../outside/target.txt", os.path.join(root, "out-link"))
    os.symlink("../outside", os.path.join(root, "out-dir-link"))
    os.mkfifo(os.path.join(root, "fifo"))
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(root, "sock"))
    s.close()
    return root


def etag(size, mtime=MTIME):
    """Returns the ETag weft gives a file of `size` bytes modified at `mtime`."""
    return '"%x-%x"' % (mtime, size)


def secret_readable(root):
    """Returns whether this process can read secret.txt despite mode 000 (running as root)."""
    try:
        with open(os.path.join(root, "secret.txt"), "rb"):
            return True
    except PermissionError:
        return False
