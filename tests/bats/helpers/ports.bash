# Free TCP ports on loopback, for the helpers that start servers (pg.bash,
# rgw.bash).  A file of its own, not common.bash: tests/run and the benches
# source those helpers outside bats.
#
#   free_port [N]   N (default 1) distinct ports the kernel chose, on one
#                   line: their sockets are held together until all are
#                   chosen, then released (a server binds them next)
free_port() {
  python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' "${1:-1}"
}
