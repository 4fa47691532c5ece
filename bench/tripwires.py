"""What the suite's tripwires cost a run: the same head's tests with the gate's plan and without, side by side.

    sudo .venv/bin/python bench/tripwires.py [--sdist more_itertools-10.5.0.tar.gz] [--rounds 9] [--workers 1]

The project is more-itertools 10.5.0 (its 664 tests), made into a repository with a policy that runs its suite
and a bot's change on top, as bench/suite_vs_pytest.py makes it. Its head is exported and its environment built
once; then each round runs the head's suite with `run_suite` (the gate's own runs: the sandbox, the watcher,
pytest, every record checked) twice, alternating which goes first: with tripwires (three items run once more,
beside their own run, the profile hook armed for them) and without (`SuiteRun.tripwires` off: the three items
go, the hook that watches every test's call stays). The difference is the tripwires' own cost per run; the
hook's is within both (bench/breadth.py's warm times against the commit before them give the whole).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from msgspec.structs import replace

from gate.environment.project import built
from gate.limits import sandbox_limits
from gate.sandbox import open_sandbox
from gate.sources import gitcli
from gate.sources.gitrange import subject_from_commits
from gate.suite.run import SuiteRun, run_suite

sys.path.insert(0, str(Path(__file__).parent))
from suite_vs_pytest import repository, sdist  # (a script beside this one)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", help="a local more-itertools 10.5.0 sdist (default: pip downloads it)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        os.environ.setdefault("GATE_CACHE_DIR", str(root / "cache"))
        repo = repository(sdist(args.sdist, root), root, args.workers)
        times: dict[bool, list[float]] = {True: [], False: []}
        handle = gitcli.Repo(repo.working_dir)
        with subject_from_commits(handle, handle.commit("main").hexsha, handle.commit("bot").hexsha) as found:
            subject, policy = found.subject, found.policy
            assert subject.suite is not None and policy.tests is not None
            limits = sandbox_limits(policy.limits)
            sites = subject.environment.site_packages if subject.environment else ()
            for layer in subject.layers or ():  # (filled once the sandbox is open, as the engine does)
                layer.path.mkdir(parents=True, exist_ok=True)
            sandbox = open_sandbox(limits, readonly=(*sites, *subject.suite.runner,
                                                     *dict.fromkeys(str(layer.path) for layer in subject.layers or ())),
                                   sites=sites)
            try:
                ready = built(subject, sandbox, limits)
                suite = ready.suite
                assert suite is not None
                run = SuiteRun(tree=suite.tree, args=suite.args,
                               python_path=(*ready.import_roots, *sites, *suite.runner), limits=limits,
                               test_timeout=policy.tests.test_timeout, workers=args.workers,
                               plugins=ready.environment.plugins if ready.environment else (),
                               what="the head's tests")
                run_suite(sandbox, run, None, time.monotonic() + 600)  # warm-up
                for round_ in range(args.rounds):
                    for tripwires in (round_ % 2 == 0, round_ % 2 == 1):
                        began = time.perf_counter()
                        result = run_suite(sandbox, replace(run, tripwires=tripwires), None, time.monotonic() + 600)
                        times[tripwires].append(time.perf_counter() - began)
                        assert not result.tampered and len(result.tests) >= 600, result.tampered
            finally:
                sandbox.close()
    on, off = times[True], times[False]
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}; {args.rounds} rounds, "
          f"{args.workers} worker(s), 664 tests")
    print(f"with tripwires:    best {min(on):.3f} s, median {statistics.median(on):.3f} s")
    print(f"without tripwires: best {min(off):.3f} s, median {statistics.median(off):.3f} s")
    print(f"cost of the tripwires: best {min(on) - min(off):+.3f} s, median "
          f"{statistics.median(on) - statistics.median(off):+.3f} s "
          f"({statistics.median(on) / statistics.median(off):.3f}x)")


if __name__ == "__main__":
    main()
