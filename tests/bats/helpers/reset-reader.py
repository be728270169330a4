#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""reset-reader.py PORTFILE BYTES GOFILE: a reader that fails for real.

Listens on an ephemeral loopback port (written to PORTFILE once ready),
serves one connection: sends BYTES random bytes, waits until GOFILE exists,
then resets the connection (SO_LINGER 0: RST), so that the program reading
it (bash's < /dev/tcp/127.0.0.1/PORT as its stdin) gets ECONNRESET: a read
error after exactly the bytes it was sent (s3-rgw.bats)."""
import os
import socket
import struct
import sys
import time

portfile, nbytes, gofile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)
conn, _ = srv.accept()
while nbytes > 0:
    k = min(nbytes, 1 << 20)
    conn.sendall(os.urandom(k))
    nbytes -= k
while not os.path.exists(gofile):
    time.sleep(0.02)
conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
conn.close()
