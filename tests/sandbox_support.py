"""A served program for `Sandbox.run_served` in tests and benchmarks: the frames of gate/sandbox/served.py in
a few lines, so that a test states only what its server does with a call."""

from __future__ import annotations

import textwrap

from gate.sandbox import served
from gate.sandbox.base import PEER_FD_ENV

# Defines `serve(answer, retire)`: for each call, `answer(channel)` (the call's socket to its peer) gives the
# call's result. With `retire`, the server answers one call and exits, so that no idle server is left behind.
SERVE = textwrap.dedent(f'''
    import os, socket, struct
    def serve(answer, retire=False):
        length = struct.Struct("!Q")
        control = socket.socket(fileno=int(os.environ[{PEER_FD_ENV!r}]))
        while True:
            head, fds, _, _ = socket.recv_fds(control, length.size, 1)
            if not head or not fds:
                os._exit(0)
            size = length.unpack(head)[0]
            if size:
                control.recv(size, socket.MSG_WAITALL)
            with socket.socket(fileno=fds[0]) as channel:
                reply = ({served.RETIRE!r} if retire else {served.KEEP!r}) + answer(channel)
            control.sendall(length.pack(len(reply)) + reply)
            if retire:
                os._exit(0)
''')
