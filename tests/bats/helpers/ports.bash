# SPDX-License-Identifier: BSD-2-Clause
# Free TCP ports on loopback, and daemons that hold no pipe of bats, for
# the helpers that start servers (pg.bash, rgw.bash).  A file of its own,
# not common.bash: tests/run and the benches source those helpers outside
# bats.
#
#   free_port [N]   N (default 1) distinct ports the kernel chose, on one
#                   line: their sockets are held together until all are
#                   chosen, then released (a server binds them next)
#   close_inherited_fds   every descriptor but 0, 1 and 2 closed, in the
#                   subshell that starts a daemon: one that outlives the
#                   command starting it would keep bats waiting on a pipe
#                   it holds open (fd 3 and bats' own)
free_port() {
  python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' "${1:-1}"
}

close_inherited_fds() {
  local fd
  for fd in /proc/"$BASHPID"/fd/*; do
    fd=${fd##*/}
    [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
  done
  return 0
}
