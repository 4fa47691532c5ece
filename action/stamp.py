"""What the Action's installation of the gate is built from, as one digest (docs/github.md): every
file of the Action's source (the lock files among them) and the interpreter. The install step reuses an
installation only when its recorded digest equals this one.

    python -I action/stamp.py SOURCE
"""

from __future__ import annotations

import hashlib
import os
import sys


def stamp(source: str) -> str:
    digest = hashlib.sha256()
    digest.update(f"{sys.executable}\0{os.path.realpath(sys.executable)}\0{sys.version}\0".encode())
    for folder, dirs, files in os.walk(source):
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]  # walked as files, not followed
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__", *links))
        for name in sorted([*files, *links]):
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, source).encode() + b"\0")
            if os.path.islink(path):
                digest.update(b"link\0" + os.readlink(path).encode())
            else:
                with open(path, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


if __name__ == "__main__":
    print(stamp(sys.argv[1]))
