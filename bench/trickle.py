#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""bench/trickle.py - slow clients for bench/load.

    trickle.py URL CAFILE TOKEN COUNT SECONDS LIMIT

COUNT connections, each sending one request over TLS one byte a second
(a request too long to finish in SECONDS), for SECONDS.  A connection the
server closes is counted as cut, with how long it lived, and opened again,
so COUNT connections trickle for the whole run.  Prints one line:

    TRICKLE<TAB>connections<TAB>cut<TAB>median_lifetime_s<TAB>answered<TAB>overdue

where answered counts connections that got an HTTP answer instead of a
close (the request must not complete at this pace: that would be a bench
bug), and overdue those the server let live longer than LIMIT seconds (its
request timeout) plus 5.
"""
import socket
import ssl
import statistics
import sys
import threading
import time
from urllib.parse import urlsplit


def main():
    url, cafile, token, count, seconds, limit = sys.argv[1:7]
    count, seconds, limit = int(count), float(seconds), float(limit)
    u = urlsplit(url)
    ctx = ssl.create_default_context(cafile=cafile)
    body = b'{"namespace":"docs","name":"papers"}' + b" " * 1024
    req = (b"POST /v1/actions/resolve HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
           % (u.netloc.encode(), token.encode(), len(body))) + body
    end = time.monotonic() + seconds
    lock = threading.Lock()
    stats = {"connections": 0, "answered": 0, "lifetimes": [], "overdue": 0}

    def one():
        while time.monotonic() < end:
            start = time.monotonic()
            try:
                raw = socket.create_connection((u.hostname, u.port), timeout=5)
                s = ctx.wrap_socket(raw, server_hostname=u.hostname)
            except OSError:
                time.sleep(0.2)
                continue
            with lock:
                stats["connections"] += 1
            s.settimeout(1.0)
            cut = False
            for i in range(len(req)):
                if time.monotonic() >= end:
                    break
                try:
                    s.sendall(req[i:i + 1])
                    data = s.recv(4096)  # waits up to 1 s: the pace
                except socket.timeout:
                    continue
                except (OSError, ssl.SSLError):
                    cut = True
                    break
                if data:
                    with lock:
                        stats["answered"] += 1
                cut = True
                break
            lived = time.monotonic() - start
            with lock:
                if cut:
                    stats["lifetimes"].append(lived)
                elif lived > limit + 5:
                    stats["overdue"] += 1
            try:
                s.close()
            except OSError:
                pass

    threads = [threading.Thread(target=one, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 10)
    lt = stats["lifetimes"]
    print("TRICKLE\t%d\t%d\t%.1f\t%d\t%d" % (stats["connections"], len(lt),
                                              statistics.median(lt) if lt else 0.0, stats["answered"],
                                              stats["overdue"]))


main()
