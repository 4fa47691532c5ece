"""How every Python process of a run gets its import path: the run's own program (gate/sandbox/child.py) and each
interpreter it starts (gate/sandbox/interpreter.py, which runs this module's source as its `site` starts), the
same way in both.

The path is the one `python script.py` has in the project's CI, where the project and its dependencies are
installed in one virtual environment: the tree's import roots (`src`) and the working directory, the standard
library, then the absolute roots the gate gives the run (the build's layer, the repository's environment, the
gate's pytest), in that order. Of those, the repository's environment (built from the base: trusted) is a site
directory, read as `site` reads one (`site.addsitedir`): its `.pth` files are processed, their import lines run
(setuptools' distutils shim, the nspkg lines of old namespace packages, an editable install's finder) and their
folders are added right after it. They run with nothing but the standard library and the environment on the
path: no module of the tree or of the build's layer (the head's) can stand in for one a `.pth` line imports.
Nothing else is read as a site directory: the tree is not (its `.pth` files are not even staged:
gate/sandbox/stage.py), nor the layer (which keeps none: gate/environment/project.py), nor the gate's pytest.

Standard library only, and nothing that needs `from __future__`: the source of this file is what each interpreter
of a run executes as it starts.
"""

import os
import site
import sys


def run_path(head: list[str], library: list[str], roots: list[str], sites: list[str]) -> list[str]:
    """The import path (a new list) made of `head` (the tree's roots and the working directory), `library`
    (the standard library's folders) and `roots` in order, each of `roots` that is among `sites` added as site
    adds a site directory (its `.pth` files processed, their folders right after it); `sys.path` is left as
    the processing made it (the library and the site directories)."""
    sys.path[:] = library
    found: list[str] = []
    for root in roots:
        if root not in sites:
            found.append(root)
            continue
        before = set(sys.path)
        site.addsitedir(root)
        found += [root, *(path for path in sys.path if path not in before and path != root)]
    return [*head, *library, *found]


MARK = "_gate_run"  # in sys.modules once `start` ran


def start(head: list[str], library: list[str], roots: list[str], sites: list[str], own: str) -> None:
    """In an interpreter a run starts (as its `site` reads the gate's `.pth`, which runs this once, marked by
    MARK): the run's import path after what PYTHONPATH added (the entries that are neither the library nor its
    own site folder `own`); no `sitecustomize` (the run's own program has none either) and no PYTHONSTARTUP."""
    sys.modules[MARK] = type(sys)(MARK)
    added = [path for path in sys.path if path not in library and path != own and path not in head]
    path = run_path(head, library, roots, sites)
    sys.path[:] = [*added, *(entry for entry in path if entry not in added)]
    sys.modules.setdefault("sitecustomize", None)  # type: ignore[arg-type]
    os.environ.pop("PYTHONSTARTUP", None)
