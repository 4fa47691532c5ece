"""The distribution as pip builds it: its own name, its licence, one version everywhere."""

from __future__ import annotations

import email.parser
import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from gate import DISTRIBUTION, POLICY_SCHEMA_URL, __version__
from gate.policy.model import DEFAULT_POLICY_PATH

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_one_version_in_pyproject_the_package_and_the_changelog() -> None:
    releases = re.findall(r"^## (\d+\.\d+\.\d+)$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert PROJECT["version"] == __version__ == releases[0]
    assert PROJECT["name"] == DISTRIBUTION


def test_the_wheel_carries_its_name_licence_and_project_urls(tmp_path: Path) -> None:
    """Built offline from a copy of the tree by the installed setuptools' PEP 517 backend, as pip would."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info",
                                                                "__pycache__", ".*_cache"))
    (tmp_path / "dist").mkdir()
    done = subprocess.run([sys.executable, "-c", "import sys, setuptools.build_meta as backend; "
                           "backend.build_wheel(sys.argv[1])", str(tmp_path / "dist")],
                          cwd=source, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [wheel] = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.startswith("error_budget_gate-")
    with zipfile.ZipFile(wheel) as archive:
        info = f"error_budget_gate-{__version__}.dist-info"
        meta = email.parser.Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        assert archive.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
        names = archive.namelist()
    assert meta["Name"] == DISTRIBUTION and meta["License-Expression"] == "MIT"
    assert "Programming Language :: Python :: 3.13" in (meta.get_all("Classifier") or [])
    assert any(url.startswith("Source, https://github.com/") for url in meta.get_all("Project-URL") or [])
    assert {"gate/starter/gate.yml", "gate/starter/gate-publish.yml"} <= set(names)  # what `gate init` writes


def test_the_schemastore_entry_points_at_the_schemas_stable_url_for_the_policy_files() -> None:
    entry = json.loads((ROOT / "schemastore" / "catalog-entry.json").read_text(encoding="utf-8"))
    schema = json.loads((ROOT / "gate" / "policy" / "schema.json").read_text(encoding="utf-8"))
    assert entry["url"] == POLICY_SCHEMA_URL == schema["$id"]
    assert POLICY_SCHEMA_URL.endswith("/main/gate/policy/schema.json")  # the path of the file in the repository
    assert DEFAULT_POLICY_PATH in entry["fileMatch"] and {"name", "description"} <= set(entry)


def test_the_readme_and_the_starter_workflows_name_the_current_release_wherever_they_name_one() -> None:
    """The pins' `# vX.Y.Z` comments, `git ls-remote ... vX.Y.Z`, `pip install error-budget-gate==X.Y.Z`, the
    log's `gate X.Y.Z`: a release that leaves one behind tells a new user to install an older gate."""
    paths = [ROOT / "README.md", *(ROOT / "gate" / "starter").glob("*.yml")]
    texts = [path.read_text(encoding="utf-8") for path in paths]
    named = {version for text in texts for pattern in (r"\bv(\d+\.\d+\.\d+)\b", r"error-budget-gate==(\d+\.\d+\.\d+)",
                                                     r"`gate (\d+\.\d+\.\d+)`")
             for version in re.findall(pattern, text)}
    assert named == {__version__}
