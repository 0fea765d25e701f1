#!/usr/bin/env python3
"""Delays every packet of an NFQUEUE queue by a fixed time: a link's propagation delay where
the kernel has no netem (this VM's has no qdisc that delays: CONFIG_NET_SCH_NETEM is off),
with iptables' NFQUEUE target (xt_NFQUEUE, built in) sending the packets here.

Each packet is held from its arrival for DELAY_MS, then accepted; a constant delay keeps the
order, so one batch verdict (NFQNL_MSG_VERDICT_BATCH: every packet up to an id) accepts all
that are due. Only the packets' metadata is copied to user space (NFQNL_COPY_META).

Usage (as root, in the network namespace whose rules queue the packets):
  nfq_delay.py QUEUE DELAY_MS
Runs until SIGTERM or SIGINT. The netlink messages are built by hand (linux/netfilter/
nfnetlink_queue.h) because Debian's Python has no NFQUEUE binding and libnetfilter-queue
would need a compiler and its -dev package for this one bench.
"""

import collections
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT_BATCH, NFQNL_MSG_CONFIG = 0, 3, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQNL_CFG_CMD_BIND, NFQNL_CFG_CMD_UNBIND = 1, 2
NFQNL_COPY_META = 1
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
QUEUE_MAXLEN = 65536  # packets held at once; past it the kernel drops (a page is ~1,000)


def attr(kind, payload):
    """Returns a netlink attribute, padded to 4 bytes."""
    data = struct.pack("=HH", 4 + len(payload), kind) + payload
    return data + b"\0" * (-len(data) % 4)


def message(kind, queue, attrs, flags=NLM_F_REQUEST, seq=0):
    """Returns an nfnetlink message of the queue subsystem for `queue` with `attrs`."""
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + b"".join(attrs)
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, flags, seq,
                       0) + body


def configure(sock, queue):
    """Binds `queue` with metadata-only copies and a long queue; raises on a refusal."""
    for seq, attrs in enumerate((
            [attr(NFQA_CFG_CMD, struct.pack("=BxH", NFQNL_CFG_CMD_BIND, 0))],
            [attr(NFQA_CFG_PARAMS, struct.pack(">IB", 0, NFQNL_COPY_META))],
            [attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack(">I", QUEUE_MAXLEN))]), 1):
        sock.send(message(NFQNL_MSG_CONFIG, queue, attrs, NLM_F_REQUEST | NLM_F_ACK, seq))
        data = sock.recv(65536)
        length, kind = struct.unpack_from("=IH", data)
        if kind == NLMSG_ERROR:
            (err,) = struct.unpack_from("=i", data, 16)
            if err != 0:
                raise OSError(-err, "NFQUEUE config step %d refused" % seq)


def packet_ids(data):
    """Yields the packet id of each NFQNL_MSG_PACKET in a netlink datagram."""
    at = 0
    while at + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, at)
        if length < 16:
            return
        if kind & 0xff == NFQNL_MSG_PACKET and kind >> 8 == NFNL_SUBSYS_QUEUE:
            a = at + 20  # past nlmsghdr and nfgenmsg
            while a + 4 <= at + length:
                alen, akind = struct.unpack_from("=HH", data, a)
                if alen < 4:
                    break
                if akind & 0x7fff == NFQA_PACKET_HDR:
                    yield struct.unpack_from(">I", data, a + 4)[0]
                a += (alen + 3) & ~3
        at += (length + 3) & ~3


def run(queue, delay):
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((0, 0))
    configure(sock, queue)
    held = collections.deque()  # (due, packet id), in arrival order
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    print("nfq_delay: queue %d, %.1f ms" % (queue, delay * 1000), flush=True)
    while not stop:
        now = time.monotonic()
        last = None
        while held and held[0][0] <= now:
            last = held.popleft()[1]
        if last is not None:
            sock.send(message(NFQNL_MSG_VERDICT_BATCH, queue,
                              [attr(NFQA_VERDICT_HDR, struct.pack(">II", NF_ACCEPT, last))]))
        wait = held[0][0] - now if held else 0.5
        try:
            ready, _, _ = select.select([sock], [], [], max(wait, 0))
        except InterruptedError:
            continue
        if ready:
            now = time.monotonic()
            for pid in packet_ids(sock.recv(1 << 20)):
                held.append((now + delay, pid))
    sock.send(message(NFQNL_MSG_CONFIG, queue,
                      [attr(NFQA_CFG_CMD, struct.pack("=BxH", NFQNL_CFG_CMD_UNBIND, 0))]))


if __name__ == "__main__":
    run(int(sys.argv[1]), float(sys.argv[2]) / 1000)
