"""The repository's own pytest suite (policy `tests:`), in one package.

`discovery.py` finds it as pytest does, from a tree's files alone (for `gate init`, and for the verdict of a
policy without `tests:` on a repository that has tests). `trust.py` says which files of the tree are the
suite's (the base's, never the head's); `selection.py` builds the trees it runs in from the base and the
head's export; `run.py` runs tests in the sandbox over its processes, each run being `harness.py` (the one
program here that runs inside the sandbox: standard library only); `baseline.py` runs the head against the
base's outcomes (the base run only where its status decides a charge, what is known of it cached by the base's
SHA) and refuses a base whose suite does not run; `order.py` runs a test again in the other side's order before
it is charged; `blind.py` says which tests could not catch a regression. The tests check (gate/checks/tests.py)
charges points from what they report.
"""
