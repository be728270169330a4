#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Drive a program through a pseudo-terminal, as a person at a keyboard.

    terminal.py SCREEN COMMAND [ARG...] < STEPS

Runs COMMAND on a new 80x24 pseudo-terminal (its stdin, stdout and stderr)
and plays STEPS, one per line:

    expect REGEX   wait until the screen printed since the last expect
                   matches REGEX (Python syntax, searched across lines)
    prompt REGEX   expect REGEX, then wait until the program reads the
                   terminal key by key (ICANON off, as a line editor sets
                   it): keys typed before that would be echoed by the
                   terminal itself, and a Ctrl-D taken as its end of line
    busy           wait until the program no longer reads key by key
                   (ICANON on again: the line editor returned, the input
                   runs)
    send TEXT      type TEXT; backslash escapes as in Python strings:
                   \\t is TAB, \\r Enter, \\x03 Ctrl-C, \\x04 Ctrl-D,
                   \\x1b[A the up arrow
    sendraw TEXT   as send, but \\xNN is the byte NN itself, not a
                   character (a byte no encoding of the terminal has)
    run SHELL      run the shell command SHELL meanwhile (another
                   process's work between two keystrokes); it must succeed
    wait           wait for COMMAND to end

Everything the terminal showed goes to SCREEN (raw bytes, escapes and
all).  The exit status is COMMAND's; 3 when a step is not met before
COMMAND ends or PTY_TIMEOUT seconds (default 120) pass, saying which.
The timeout only bounds a broken run: a step waits for the program,
never for a time.
"""
import codecs
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time


class GiveUp(Exception):
    pass


class Terminal:
    def __init__(self, screen_path, argv, timeout):
        self.timeout = timeout
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvp(argv[0], argv)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.screen = open(screen_path, "wb")
        self.seen = b""  # since the last expect
        self.ended = False

    def pump(self, wait):
        """Copy what the program printed within wait seconds."""
        r, _, _ = select.select([self.fd], [], [], wait)
        if not r:
            return
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the program and its terminal are gone
            data = b""
        if not data:
            self.ended = True
            return
        self.screen.write(data)
        self.screen.flush()
        self.seen += data

    def until(self, met, what):
        """Pump until met() holds; GiveUp saying what when it never does."""
        deadline = time.monotonic() + self.timeout
        while not met():
            if self.ended or time.monotonic() > deadline:
                raise GiveUp(what)
            self.pump(0.05)

    def canonical(self):
        return bool(termios.tcgetattr(self.fd)[3] & termios.ICANON)

    def step(self, verb, arg):
        if verb == "send":
            # the escapes decoded, any other character kept (as UTF-8)
            keys = codecs.decode(arg.encode("latin-1", "backslashreplace"), "unicode_escape")
            os.write(self.fd, keys.encode("utf-8"))
        elif verb == "sendraw":
            os.write(self.fd, codecs.escape_decode(arg.encode("utf-8"))[0])
        elif verb in ("expect", "prompt"):
            pattern = re.compile(arg.encode("utf-8"), re.S)
            self.until(lambda: pattern.search(self.seen),
                       "never saw %r; the screen since the last match:\n%s"
                       % (arg, self.seen.decode("utf-8", "replace")))
            self.seen = b""
            if verb == "prompt":
                self.until(lambda: not self.canonical(), "the terminal stayed canonical after %r" % arg)
        elif verb == "busy":
            self.until(self.canonical, "the program never left its line editor")
        elif verb == "run":
            done = subprocess.run(arg, shell=True)
            if done.returncode != 0:
                raise GiveUp("%r exited %d" % (arg, done.returncode))
        else:
            raise GiveUp("unknown step %r" % verb)

    def finish(self):
        self.until(lambda: self.ended, "the program did not end")
        _, status = os.waitpid(self.pid, 0)
        self.screen.close()
        return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def main():
    t = Terminal(sys.argv[1], sys.argv[2:], float(os.environ.get("PTY_TIMEOUT", "120")))
    try:
        for line in sys.stdin.read().splitlines():
            verb, _, arg = line.partition(" ")
            if verb == "wait":
                break
            if verb:
                t.step(verb, arg)
        return t.finish()
    except GiveUp as e:
        sys.stderr.write("terminal.py: %s\n" % e)
        os.kill(t.pid, 9)
        os.waitpid(t.pid, 0)
        return 3


if __name__ == "__main__":
    sys.exit(main())
