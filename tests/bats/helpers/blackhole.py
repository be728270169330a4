#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""blackhole.py LISTEN TARGET: a TCP proxy that can stop answering on demand.

A FAULT INJECTOR for the tests (metasrv-stall.bats), not a model of
anything the program talks to: a real PostgreSQL cannot be made to stop
answering on cue without closing its connections (a stopped or killed
server closes them, or its host answers RST), yet a registry behind a
dead route, a hung host or a full network queue does exactly that.  This
proxy does it:

  listens on 127.0.0.1:LISTEN (0: a port the kernel chooses, printed on
  stdout, one line, once it listens), and forwards every connection to
  127.0.0.1:TARGET, both ways;
  SIGUSR1: black hole.  Nothing is forwarded in either direction, no
    connection is closed, and no socket is even read, so that the peers'
    own sends stall once the kernel's buffers are full; new connections
    are still accepted (and connected to TARGET) but nothing is forwarded
    on them either;
  SIGUSR2: forwarding again, of everything, what was left in the kernel's
    buffers and what this proxy had read before included.

Note that the kernel still ACKs bytes into a socket's receive buffer that
nobody reads: the client sees nothing wrong at the TCP level (no RST, no
timeout, keepalives answered), which is why lake-metasrv needs a probe of
its own, at the application level, to notice a registry that stopped
answering.

One thread, selectors; a connection is closed on both sides once both
directions have ended (EOF forwarded as a shutdown) or either side fails.
SIGTERM or SIGINT ends it.  Python 3 standard library only.
"""
import os
import selectors
import signal
import socket
import sys

CHUNK = 1 << 16
HIGH_WATER = 1 << 20  # bytes kept for a peer that does not read; then stop reading


class Side:
    """One socket of a pair: what is waiting to be written to it, and
    whether its peer has ended (EOF read from the peer)."""

    def __init__(self, sock):
        self.sock = sock
        self.out = bytearray()
        self.peer_eof = False  # the peer said EOF: shut this one's write side once out is empty
        self.shut_wr = False
        self.eof = False  # this socket said EOF
        self.peer = None


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: blackhole.py LISTEN TARGET\n")
        return 64
    listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])

    sel = selectors.DefaultSelector()
    state = {"paused": False, "stop": False}

    # signals through a socket pair, so that select wakes at once
    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)

    def on_signal(signum, _frame):
        if signum == signal.SIGUSR1:
            state["paused"] = True
        elif signum == signal.SIGUSR2:
            state["paused"] = False
        else:
            state["stop"] = True

    for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGINT):
        signal.signal(s, on_signal)

    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen_port))
    srv.listen(128)
    srv.setblocking(False)
    sides = []  # every open Side

    def close_pair(side):
        for s in (side, side.peer):
            if s in sides:
                sides.remove(s)
                try:
                    s.sock.close()
                except OSError:
                    pass

    def accept():
        while True:
            try:
                c, _ = srv.accept()
            except (BlockingIOError, InterruptedError):
                return
            try:
                u = socket.create_connection(("127.0.0.1", target_port), timeout=5)
            except OSError:
                c.close()  # the target refuses: so does the proxy
                continue
            for s in (c, u):
                s.setblocking(False)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            a, b = Side(c), Side(u)
            a.peer, b.peer = b, a
            sides.extend((a, b))

    def read_from(side):
        try:
            data = side.sock.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            close_pair(side)
            return
        if not data:
            side.eof = True
            side.peer.peer_eof = True
        else:
            side.peer.out += data

    def write_to(side):
        if side.out:
            try:
                n = side.sock.send(side.out)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                close_pair(side)
                return
            del side.out[:n]
        if not side.out and side.peer_eof and not side.shut_wr:
            side.shut_wr = True
            try:
                side.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    if listen_port == 0:
        print(srv.getsockname()[1], flush=True)

    while not state["stop"]:
        # what to wait for: the listener and the wake-up always; the
        # connections only while forwarding (paused: not even read)
        sel.register(srv, selectors.EVENT_READ, "accept")
        sel.register(wake_r, selectors.EVENT_READ, "wake")
        if not state["paused"]:
            for s in sides:
                ev = 0
                if not s.eof and len(s.peer.out) < HIGH_WATER:
                    ev |= selectors.EVENT_READ
                if s.out or (s.peer_eof and not s.shut_wr):
                    ev |= selectors.EVENT_WRITE
                if ev:
                    sel.register(s.sock, ev, s)
        ready = sel.select(timeout=1.0)
        for key in list(sel.get_map().values()):
            sel.unregister(key.fileobj)
        for key, ev in ready:
            if key.data == "accept":
                accept()
            elif key.data == "wake":
                try:
                    while wake_r.recv(512):
                        pass
                except (BlockingIOError, InterruptedError):
                    pass
            elif not state["paused"] and key.data in sides:
                if ev & selectors.EVENT_READ:
                    read_from(key.data)
                if key.data in sides and ev & selectors.EVENT_WRITE:
                    write_to(key.data)
        # a pair whose both directions ended, everything written, goes
        for s in list(sides):
            if s in sides and s.eof and s.peer.eof and s.shut_wr and s.peer.shut_wr:
                close_pair(s)
    for s in list(sides):
        close_pair(s)
    srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
