"""What the Action's installation of the gate is built from, as one digest (docs/github.md): every
file of the Action's source (the lock files among them) and of the interpreter (its executable, its standard
library with lib-dynload and site-packages, its libpython: what action/python.sh copies), bytecode aside. The
install step reuses an installation only when its recorded digest equals this one.

    python -I action/stamp.py SOURCE
"""

from __future__ import annotations

import glob
import hashlib
import os
import sys


def _walk(digest: hashlib._Hash, root: str, skip: tuple[str, ...] = ()) -> None:
    """Every file under `root` (a file itself, or a directory), by its path relative to `root`'s parent: its
    contents' hash, or a link's target (links are not followed)."""
    if not os.path.isdir(root) or os.path.islink(root):
        _one(digest, root, os.path.dirname(root))
        return
    for folder, dirs, files in os.walk(root):
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]  # walked as files, not followed
        dirs[:] = sorted(d for d in dirs if d not in (*skip, *links))
        for name in sorted([*files, *links]):
            _one(digest, os.path.join(folder, name), root)


def _one(digest: hashlib._Hash, path: str, base: str) -> None:
    digest.update(os.path.relpath(path, base).encode() + b"\0")
    if os.path.islink(path):
        digest.update(b"link\0" + os.readlink(path).encode())
    else:
        with open(path, "rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())


def interpreter_files() -> list[str]:
    """The interpreter's executable, standard library and libpython, as action/python.sh finds them."""
    executable = os.path.realpath(sys.executable)
    name = os.path.basename(executable)
    prefix = os.path.dirname(os.path.dirname(executable))
    libraries = sorted({*glob.glob(os.path.join(prefix, "lib", f"lib{name}*.so*")),
                        *glob.glob(os.path.join(prefix, "lib", "libpython3.so"))})
    return [executable, os.path.join(prefix, "lib", name), *libraries]


def stamp(source: str) -> str:
    digest = hashlib.sha256()
    digest.update(f"{sys.executable}\0{os.path.realpath(sys.executable)}\0{sys.version}\0".encode())
    for path in interpreter_files():  # its bytecode aside: the runner's own use of it writes more
        digest.update(b"interpreter\0")
        _walk(digest, path, skip=("__pycache__",))
    digest.update(b"source\0")
    _walk(digest, source, skip=(".git", "__pycache__"))
    return digest.hexdigest()


if __name__ == "__main__":
    print(stamp(sys.argv[1]))
