"""The environment's installer: uv told the user's pip configuration, pip where uv is absent, the cache key.

What uv used is checked by what it built: wheels that exist only in a folder, a local index or an HTTPS index
that the pip configuration alone names, with uv's own variables pointing elsewhere.
"""

from __future__ import annotations

import contextlib
import datetime
import http.server
import ipaddress
import json
import os
import shutil
import ssl
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from gate.environment import BuiltEnvironment, installers, pip_config
from gate.environment.build import prepare, requirement_names
from gate.errors import GateFailure
from gate.policy.model import Environment
from gate.progress import Progress
from gate.sandbox.detect import run_interpreter
from tests.projects import (  # noqa: F401
    BACKEND,
    SLUGIFY,
    gate_cache,
    gate_cache_root,
    offline_pip,
    project_repo,
    pyproject,
    wheel_of_installed,
    wheelhouse,
    write_wheel,
)

WITH_UV = installers.find(os.environ, {}, Path("/nonexistent")).name == "uv"
UV_ELSEWHERE = {  # uv's own settings, pointing where nothing can be found: the gate must not pass them on
    "UV_INDEX_URL": "http://127.0.0.1:9/simple", "UV_DEFAULT_INDEX": "http://127.0.0.1:9/simple",
    "UV_FIND_LINKS": "/nonexistent", "UV_NO_INDEX": "0", "UV_OFFLINE": "1"}


def clean_environ(home: Path) -> dict[str, str]:
    """This process's variables without the machine's pip settings (PIP_*, its global files under /etc/xdg) and
    with an empty home (no user file), so that a test's configuration is all pip would read."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "XDG_CONFIG"))}
    home.mkdir(exist_ok=True)
    return {**environ, "HOME": str(home), "XDG_CONFIG_DIRS": str(home / "no-global"),
            "XDG_CACHE_HOME": str(home / ".cache")}


def build(tmp_path: Path, requires: list[str], environ: Mapping[str, str], cache: Path | None = None,
          files: Mapping[str, str] | None = None, spec: Environment | None = None) -> BuiltEnvironment:
    """The environment of a base project that requires `requires`, built with this process's installer."""
    tree = {"_backend/backend.py": BACKEND, "pyproject.toml": pyproject("probe-base", requires), **(files or {})}

    def export(target: Path) -> None:
        for path, text in tree.items():
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            (target / path).write_text(text)

    where = cache or tmp_path / "cache"
    where.mkdir(exist_ok=True)
    # (what the gate says of its installer goes to the command's progress: here stderr, as `gate check` has it)
    return prepare(spec or Environment(), tree.get, list(tree), export, run_interpreter(), where, environ,
                   Progress(sys.stderr))


def simple_index(root: Path, wheels: list[Path]) -> Path:
    """A PEP 503 index of `wheels` under `root` (root/simple/NAME/index.html linking root/files/WHEEL)."""
    (root / "files").mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        shutil.copy(wheel, root / "files" / wheel.name)
        name = wheel.name.split("-")[0].replace("_", "-").lower()
        page = root / "simple" / name / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        links = page.read_text() if page.exists() else ""
        page.write_text(links + f'<a href="../../files/{wheel.name}">{wheel.name}</a>\n')
    return root / "simple"


def probe_wheels(folder: Path) -> dict[str, Path]:
    """Wheels of names no index holds: probe-one 1.0, probe-two 1.0, probe-three 1.0 and 2.0."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {f"{name}-{version}": write_wheel(folder, name, {f"{name.replace('-', '_')}.py": f"V = {version!r}\n"},
                                             version=version)
            for name, version in (("probe-one", "1.0"), ("probe-two", "1.0"), ("probe-three", "1.0"),
                                  ("probe-three", "2.0"))}
    return made


@pytest.fixture(scope="module")
def setuptools_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """probe_wheels' wheels and setuptools' (a setup.py's build backend, taken from the wheelhouse offline)."""
    folder = tmp_path_factory.mktemp("setuptools-wheels")
    probe_wheels(folder)
    wheel_of_installed(folder, "setuptools")
    return folder


# A pyproject.toml without `[project]`: the metadata is setup.py's (or setup.cfg's).
SETUPTOOLS = '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'


@pytest.mark.skipif(not WITH_UV, reason="uv is not beside the gate's interpreter")
class TestUvToldPipsConfiguration:
    def test_a_wheelhouse_named_only_in_a_pip_config_file(self, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
        """Offline: no index, the wheels in a folder that only PIP_CONFIG_FILE's file names; uv's own variables
        point at a dead index, a missing folder and offline mode, and are not read."""
        wheels = probe_wheels(tmp_path / "wheelhouse")
        config = tmp_path / "pip.conf"
        config.write_text(f"[global]\nno-index = true\nfind-links = {wheels['probe-one-1.0'].parent}\n")
        environ = {**clean_environ(tmp_path / "home"), "PIP_CONFIG_FILE": str(config), **UV_ELSEWHERE}

        built = build(tmp_path, ["probe-one", "probe-two"], environ)

        assert built.installed == ("probe-one==1.0", "probe-two==1.0")
        # uv's cache is the gate's (which only root or the gate's user can change), not the home's.
        assert (tmp_path / "cache" / "uv").is_dir() and not (tmp_path / "home" / ".cache").exists()
        err = capsys.readouterr().err
        assert "environment is built by uv" in err
        assert f"no-index ({config})" in err and f"find-links ({config})" in err

    def test_index_urls_sections_and_variables_as_pip_reads_them(self, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
        """A user file's [install] index-url over its [global] one (a dead index), PIP_EXTRA_INDEX_URL over the
        file's extra-index-url (a dead one); both indexes consulted for every package and the best version
        taken, as pip takes it (probe-three 2.0 is only on the extra index)."""
        wheels = probe_wheels(tmp_path / "wheels")
        first = simple_index(tmp_path / "first", [wheels["probe-one-1.0"], wheels["probe-three-1.0"]])
        extra = simple_index(tmp_path / "extra", [wheels["probe-two-1.0"], wheels["probe-three-2.0"]])
        environ = clean_environ(tmp_path / "home")
        user = tmp_path / "home" / ".config" / "pip" / "pip.conf"
        user.parent.mkdir(parents=True)
        user.write_text("[global]\nindex-url = http://127.0.0.1:9/simple\nextra-index-url = http://127.0.0.1:9/x\n"
                        f"[install]\nindex-url = {first.as_uri()}\n")
        environ |= {"PIP_EXTRA_INDEX_URL": extra.as_uri(), **UV_ELSEWHERE}

        built = build(tmp_path, ["probe-one", "probe-two", "probe-three"], environ)

        assert built.installed == ("probe-one==1.0", "probe-three==2.0", "probe-two==1.0")
        err = capsys.readouterr().err
        assert f"index-url ({user})" in err and "extra-index-url (PIP_EXTRA_INDEX_URL)" in err
        # Values stay out of the log (an index URL may hold a token).
        assert first.as_uri() not in err and extra.as_uri() not in err

    def test_the_base_project_is_not_built_for_its_dependencies(self, tmp_path: Path) -> None:
        """uv learns the base project's requirements (with its extras) from its metadata: a build, which a C
        extension makes dear, is not what gives them. A backend that refuses to build still yields them, and
        neither the project nor anything of its build is left in the environment."""
        wheels = probe_wheels(tmp_path / "wheelhouse")
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1",
                   "PIP_FIND_LINKS": str(wheels["probe-one-1.0"].parent)}
        refusing = BACKEND + "\n\ndef build_wheel(*args, **kwargs):\n    raise RuntimeError('built')\n"
        files = {"_backend/backend.py": refusing,
                 "pyproject.toml": pyproject("probe-base", ["probe-one"], extras={"test": ["probe-two"]})}

        built = build(tmp_path, [], environ, files=files, spec=Environment(extras=("test",)))

        assert built.installed == ("probe-one==1.0", "probe-two==1.0")

    def test_an_extra_that_names_the_project_itself_is_read_from_the_base(self, tmp_path: Path) -> None:
        """`test = ["probe-base[more]"]` names the project itself: its `more` extra is the base's (the project is
        installed, then removed), never that of the distribution of that name the index holds (probe-base 9.0,
        whose `more` asks for probe-two): uv's install would take that one."""
        wheels = probe_wheels(tmp_path / "wheelhouse")
        write_wheel(tmp_path / "wheelhouse", "probe-base", {"probe_base.py": "V = 9\n"}, version="9.0",
                    requires=('probe-two; extra == "more"',))
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1",
                   "PIP_FIND_LINKS": str(wheels["probe-one-1.0"].parent)}
        # (its version from the build, as attrs' comes from git: uv then cannot tell the index's from the base's)
        text = pyproject("probe-base", ["probe-one"], extras={"test": ["probe-base[more]"], "more": ["probe-three"]})
        files = {"pyproject.toml": text.replace('version = "1.0"\n', 'dynamic = ["version"]\n'),
                 "_backend/backend.py": BACKEND.replace("project['version']", "project.get('version', '1.0')")}

        built = build(tmp_path, [], environ, files=files, spec=Environment(extras=("test",)))

        assert built.installed == ("probe-one==1.0", "probe-three==2.0")

    def test_a_dependency_that_requires_the_project_leaves_no_copy_of_it(self, tmp_path: Path) -> None:
        """A dependency that requires the project itself (hypothesis requires attrs) gets the base's tree, never
        the index's copy of the project, and the tree is removed again as when the project is installed, so that
        the tests import the head's."""
        folder = tmp_path / "wheelhouse"
        probe_wheels(folder)
        write_wheel(folder, "probe-needs-base", {"probe_needs_base.py": "V = 1\n"}, requires=("probe-base",))
        write_wheel(folder, "probe-base", {"probe_base.py": "V = 9\n"}, version="9.0")
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder)}
        files = {"pyproject.toml": pyproject("probe-base", ["probe-one", "probe-needs-base"])}

        built = build(tmp_path, [], environ, files=files)

        assert built.installed == ("probe-needs-base==1.0", "probe-one==1.0")

    def test_a_dependency_that_requires_a_project_no_index_holds_gets_the_bases_tree(self, tmp_path: Path) -> None:
        """A test extra's dependency that requires the project itself (its plugin, a circular pair), the project
        on no index (a private one): installing the project satisfied it with the base's tree; installing only
        its dependencies must too, not stop at exit 3 for want of a copy on the index."""
        folder = tmp_path / "wheelhouse"
        probe_wheels(folder)
        write_wheel(folder, "probe-needs-base", {"probe_needs_base.py": "V = 1\n"}, requires=("probe-base",))
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder)}
        files = {"pyproject.toml": pyproject("probe-base", ["probe-one"], extras={"test": ["probe-needs-base"]})}

        built = build(tmp_path, [], environ, files=files, spec=Environment(extras=("test",)))

        assert built.installed == ("probe-needs-base==1.0", "probe-one==1.0")

    def test_the_index_copy_of_the_project_leaves_none_of_its_requirements(self, tmp_path: Path) -> None:
        """The index's copy of the project (9.0) requires probe-two and probe-three<2, the base's tree neither:
        a dependency that requires the project gets the base's tree, so the environment is the one installing
        the project gives (probe-three 2.0, no probe-two), not one shaped by another release of it."""
        folder = tmp_path / "wheelhouse"
        probe_wheels(folder)
        write_wheel(folder, "probe-needs-base", {"probe_needs_base.py": "V = 1\n"}, requires=("probe-base",))
        write_wheel(folder, "probe-base", {"probe_base.py": "V = 9\n"}, version="9.0",
                    requires=("probe-two", "probe-three<2"))
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder)}
        files = {"pyproject.toml": pyproject("probe-base", ["probe-one", "probe-three"],
                                             extras={"test": ["probe-needs-base"]})}

        built = build(tmp_path, [], environ, files=files, spec=Environment(extras=("test",)))

        assert built.installed == ("probe-needs-base==1.0", "probe-one==1.0", "probe-three==2.0")

    def test_a_dependency_group_that_names_the_project_with_an_extra(self, tmp_path: Path) -> None:
        """`[dependency-groups] test = ["probe-base[more]"]`: the base's `more` extra (probe-two), as installing
        the project gave it, not a failure for want of probe-base on the index."""
        folder = tmp_path / "wheelhouse"
        probe_wheels(folder)
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder)}
        text = pyproject("probe-base", ["probe-one"], extras={"more": ["probe-two"]})
        files = {"pyproject.toml": text + '\n[dependency-groups]\ntest = ["probe-base[more]", "probe-three<2"]\n'}

        built = build(tmp_path, [], environ, files=files, spec=Environment(groups=("test",)))

        assert built.installed == ("probe-one==1.0", "probe-three==1.0", "probe-two==1.0")

    def test_a_python_the_project_does_not_support_is_refused(self, tmp_path: Path) -> None:
        """`requires-python = ">=3.99"`: installing the project refuses this interpreter (exit 3); `uv pip
        install -r pyproject.toml` does not look, and must not build an environment the project rules out."""
        probe_wheels(tmp_path / "wheelhouse")
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1",
                   "PIP_FIND_LINKS": str(tmp_path / "wheelhouse")}
        text = pyproject("probe-base", ["probe-one"]).replace('version = "1.0"\n',
                                                                'version = "1.0"\nrequires-python = ">=3.99"\n')

        with pytest.raises(GateFailure, match=r"Python>=3\.99"):
            build(tmp_path, [], environ, files={"pyproject.toml": text})

    @pytest.mark.parametrize("files", [
        {"setup.py": "from setuptools import setup\nsetup(name='probe-base', version='1.0', py_modules=[], "
                     "install_requires=['probe-one'], python_requires='>=3.99')\n"},
        {"setup.py": "from setuptools import setup\nsetup()\n",
         "setup.cfg": "[metadata]\nname = probe-base\nversion = 1.0\n[options]\npy_modules =\n"
                      "python_requires = >=3.99\ninstall_requires =\n    probe-one\n"},
        {"setup.py": "from setuptools import setup\nsetup(name='probe-base', version='1.0', py_modules=[], "
                     "install_requires=['probe-one'], python_requires='>=3.' + '99')\n"},
        {"pyproject.toml": pyproject("probe-base", ["probe-one"]).replace(
            "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\"_backend\"]\n",
            SETUPTOOLS) + 'dynamic = ["requires-python"]\n[tool.setuptools]\npy-modules = []\n',
         "setup.py": "from setuptools import setup\nsetup(python_requires='>=3.99')\n"},
    ], ids=["setup.py", "setup.cfg", "setup.py-computes-it", "pyproject-leaves-it-dynamic"])
    def test_a_python_the_setup_py_project_does_not_support_is_refused(
            self, tmp_path: Path, setuptools_wheels: Path, files: dict[str, str]) -> None:
        """setup.py's `python_requires` (or setup.cfg's) is the project's Requires-Python as pyproject.toml's
        `requires-python` is: installing the project refuses this interpreter (exit 3), and so must the gate when
        uv reads the project's requirements from its metadata. One that setup.py computes is not read: the
        project is installed, which refuses it."""
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(setuptools_wheels)}

        with pytest.raises(GateFailure, match=r"installing the base project from the base commit") as err:
            build(tmp_path, [], environ, files={"pyproject.toml": SETUPTOOLS, **files})
        assert ">=3.99" in str(err.value), err.value

    @pytest.mark.parametrize("table", ["dynamic = 5\n", "[project.optional-dependencies]\ntest = 5\n"],
                             ids=["dynamic-not-a-list", "extra-not-a-list"])
    def test_a_malformed_project_table_is_a_clear_error(self, tmp_path: Path, table: str) -> None:
        """A `[project]` table of another shape than PEP 621's is judged as when the project is installed (uv
        names the line, exit 3), never a traceback of the gate's."""
        probe_wheels(tmp_path / "wheelhouse")
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1",
                   "PIP_FIND_LINKS": str(tmp_path / "wheelhouse")}
        files = {"pyproject.toml": pyproject("probe-base", ["probe-one"]) + table}

        with pytest.raises(GateFailure, match=r"installing the base project with extras \[test\] from the base "
                                              r"commit failed") as err:
            build(tmp_path, [], environ, files=files, spec=Environment(extras=("test",)))
        assert "invalid type: integer `5`, expected a sequence" in str(err.value), err.value

    @pytest.mark.parametrize("trust", ["none", "trusted-host", "PIP_CERT"])
    def test_an_https_index_trusted_as_pip_is_told_to(self, tmp_path: Path, trust: str) -> None:
        """An HTTPS index whose certificate no store knows: uv refuses it unless pip's configuration trusts the
        host (trusted-host in a file) or names the CA (PIP_CERT)."""
        wheels = probe_wheels(tmp_path / "wheels")
        index = simple_index(tmp_path / "index", [wheels["probe-one-1.0"]])
        environ = clean_environ(tmp_path / "home")
        with https_server(index.parent, tmp_path / "tls") as (port, ca):
            config = tmp_path / "pip.conf"
            text = f"[global]\nindex-url = https://127.0.0.1:{port}/simple\n"
            if trust == "trusted-host":
                text += f"trusted-host = example.org 127.0.0.1:{port}\n"
            config.write_text(text)
            environ |= {"PIP_CONFIG_FILE": str(config), "PIP_RETRIES": "0", **UV_ELSEWHERE}
            if trust == "PIP_CERT":
                environ["PIP_CERT"] = str(ca)
            if trust == "none":
                with pytest.raises(GateFailure, match=r"installing the base project from the base commit") as err:
                    build(tmp_path, ["probe-one"], environ)
                assert "certificate" in str(err.value), err.value
                return
            built = build(tmp_path, ["probe-one"], environ)
        assert built.installed == ("probe-one==1.0",)

    def test_the_key_follows_the_index_settings_not_the_connection(self, tmp_path: Path) -> None:
        """Another index is another environment; another timeout, a CA or the log's verbosity are not."""
        wheels = probe_wheels(tmp_path / "wheels")
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1",
                   "PIP_FIND_LINKS": str(wheels["probe-one-1.0"].parent)}
        cache = tmp_path / "cache"
        first = build(tmp_path, ["probe-one"], environ, cache)
        again = build(tmp_path, ["probe-one"], {**environ, "PIP_TIMEOUT": "5", "PIP_VERBOSE": "1",
                                                "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt"}, cache)
        assert again.cached and again.key == first.key
        other = simple_index(tmp_path / "index", [wheels["probe-one-1.0"]])
        moved = build(tmp_path, ["probe-one"], {**environ, "PIP_FIND_LINKS": f"{other.parent / 'files'}"}, cache)
        assert not moved.cached and moved.key != first.key
        constrained = tmp_path / "constraints.txt"
        constrained.write_text("probe-one<2\n")
        with_constraint = build(tmp_path, ["probe-one"], {**environ, "PIP_CONSTRAINT": str(constrained)}, cache)
        constrained.write_text("probe-one<3\n")  # the file's text is in the key, not only its name
        edited = build(tmp_path, ["probe-one"], {**environ, "PIP_CONSTRAINT": str(constrained)}, cache)
        assert len({first.key, with_constraint.key, edited.key}) == 3

    def test_what_uv_cannot_take_is_said(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        wheels = probe_wheels(tmp_path / "wheels")
        environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "yes",
                   "PIP_FIND_LINKS": str(wheels["probe-one-1.0"].parent), "PIP_PREFER_BINARY": "1",
                   "PIP_KEYRING_PROVIDER": "import", "PIP_USE_FEATURE": "fast-deps"}
        build(tmp_path, ["probe-one"], environ)
        err = capsys.readouterr().err
        assert "not carried over: " in err
        for said in ("prefer-binary (PIP_PREFER_BINARY): uv has no such preference",
                     "keyring-provider (PIP_KEYRING_PROVIDER): uv has only the disabled and subprocess providers",
                     "use-feature (PIP_USE_FEATURE)"):
            assert said in err


@contextlib.contextmanager
def https_server(root: Path, folder: Path) -> Iterator[tuple[int, Path]]:
    """An HTTPS server of `root` on 127.0.0.1 with a certificate of a CA of its own: (its port, the CA's PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir()
    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name | None,
                    signer: ec.EllipticCurvePrivateKey, ca: bool) -> x509.Certificate:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        made = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer or name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
                .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            made = made.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                      critical=False)
        return made.sign(signer, hashes.SHA256())

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("probe CA", ca_key, None, ca_key, ca=True)
    leaf = certificate("127.0.0.1", leaf_key, ca.subject, ca_key, ca=False)
    ca_pem, chain = folder / "ca.pem", folder / "leaf.pem"
    ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    chain.write_bytes(leaf.public_bytes(serialization.Encoding.PEM) + leaf_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(chain)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             lambda *a: Quiet(*a, directory=str(root)))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], ca_pem
    finally:
        server.shutdown()
        server.server_close()


def test_pip_reads_its_files_in_order_then_its_variables(tmp_path: Path) -> None:
    """Global (each XDG_CONFIG_DIRS, then /etc), user (~/.pip, then XDG_CONFIG_HOME), site (the prefix of
    pip's Python), PIP_CONFIG_FILE, each over the one before; [install] over [global]; PIP_* over all."""
    home = tmp_path / "home"
    environ = clean_environ(home)
    xdg = tmp_path / "xdg"
    files = {xdg / "pip" / "pip.conf": "[global]\nindex-url = global\nfind-links = a b\npre = on\n",
             home / ".pip" / "pip.conf": "[global]\nindex-url = legacy-user\n",
             tmp_path / "config" / "pip" / "pip.conf": "[global]\nindex-url = user\n[install]\nfind-links = c\n",
             tmp_path / "site" / "pip.conf": "[install]\nindex-url = site\n[download]\nno-index = yes\n"}
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    environ |= {"XDG_CONFIG_DIRS": str(xdg), "XDG_CONFIG_HOME": str(tmp_path / "config")}

    found = pip_config.settings(environ, str(tmp_path / "site"))
    assert found["index-url"].value == "site" and found["find-links"].value == ("c",)
    assert found["find-links"].source == str(tmp_path / "config" / "pip" / "pip.conf")
    assert found["pre"].value is True and "no-index" not in found  # ([download] is another command's)

    named = tmp_path / "named.conf"
    named.write_text("[global]\nindex-url = named\n")
    found = pip_config.settings({**environ, "PIP_CONFIG_FILE": str(named), "PIP_FIND_LINKS": "d  e",
                                 "PIP_DEFAULT_TIMEOUT": "7", "PIP_NO_INDEX": "off"}, str(tmp_path / "none"))
    # A PIP_CONFIG_FILE that exists leaves out the user's files; the variables win over every file.
    assert found["index-url"].value == "named" and found["find-links"].value == ("d", "e")
    assert found["timeout"].value == "7" and found["no-index"].value is False
    assert pip_config.settings({**environ, "PIP_CONFIG_FILE": os.devnull}, str(tmp_path / "site")) == {}
    found.pop("cert", None)  # (this machine's /etc/pip.conf)
    uv = pip_config.for_uv(found, {})
    assert uv.arguments == ("--default-index", "named", "--find-links", "d", "--find-links", "e", "--prerelease",
                            "allow")
    assert dict(uv.environment) == {"UV_HTTP_TIMEOUT": "7"}


def test_a_configuration_pip_would_refuse_stops_the_gate(tmp_path: Path) -> None:
    environ = clean_environ(tmp_path / "home")
    broken = tmp_path / "pip.conf"
    broken.write_text("[global]\nindex-url = x\nthis line is no option\n")
    with pytest.raises(GateFailure, match=r"pip.conf:3: pip's configuration file does not parse: 'this line is no "
                                          r"option' is not a `name = value` line"):
        pip_config.settings({**environ, "PIP_CONFIG_FILE": str(broken)}, str(tmp_path / "site"))
    with pytest.raises(GateFailure, match=r"PIP_NO_INDEX: 'maybe' is not a yes or a no"):
        pip_config.settings({**environ, "PIP_NO_INDEX": "maybe"}, str(tmp_path / "site"))


def test_a_relative_pip_config_file_stops_the_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip runs in the base's export and reads a relative PIP_CONFIG_FILE there: the gate, which would read it
    from the folder it was started in (a checkout of the head, a bot's pip.conf in it) and tell uv what it says,
    refuses it and says what to do."""
    started = tmp_path / "checkout"
    started.mkdir()
    (started / "pip.conf").write_text("[global]\nfind-links = /somewhere\n")
    monkeypatch.chdir(started)
    environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": "pip.conf"}

    with pytest.raises(GateFailure, match=r"^PIP_CONFIG_FILE: 'pip.conf' is a relative path, which pip would read "
                                          r"from the folder it runs in \(the base's export\), .*: give an absolute"):
        build(tmp_path, ["probe-one"], environ)


def test_a_relative_constraint_file_stops_the_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative constraint file (PIP_CONSTRAINT, or `constraint` in a pip.conf) is read by the installer in
    the base's export, while the environment's key would hold the text of the one in the gate's working
    directory: refused, naming where it was set. An absolute path or a URL is what it was."""
    started = tmp_path / "checkout"
    started.mkdir()
    (started / "constraints.txt").write_text("probe-one<2\n")
    (tmp_path / "ours.conf").write_text("[install]\nconstraint = ci/constraints.txt\n")
    monkeypatch.chdir(started)
    environ = {**clean_environ(tmp_path / "home"), "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull}

    with pytest.raises(GateFailure, match=r"^PIP_CONSTRAINT: 'constraints.txt' is a relative path, which pip would "
                                          r"read from the folder it runs in"):
        build(tmp_path, ["probe-one"], {**environ, "PIP_CONSTRAINT": "/abs/c.txt constraints.txt"})
    with pytest.raises(GateFailure, match=r"ours.conf: constraint: 'ci/constraints.txt' is a relative path"):
        pip_config.settings({**environ, "PIP_CONFIG_FILE": str(tmp_path / "ours.conf")}, str(tmp_path / "site"))
    absolute = str(started / "constraints.txt")
    found = pip_config.settings({**environ, "PIP_CONSTRAINT": f"{absolute} https://example.org/c.txt"},
                                str(tmp_path / "site"))
    assert found["constraint"].value == (absolute, "https://example.org/c.txt")


def test_uv_is_taken_only_from_beside_the_gates_interpreter_and_only_when_no_one_else_could_replace_it(
        tmp_path: Path) -> None:
    uv = Path(sys.executable).parent / "uv"
    empty = tmp_path / "bin"
    empty.mkdir()
    chosen = installers.find(os.environ, {}, tmp_path / "uv-cache", empty)
    assert chosen.name == "pip" and chosen.describe() == (f"uv is not beside the gate's interpreter ({empty / 'uv'}): "
                                                          "pip builds the environment instead")
    if not uv.is_file():
        return
    (empty / "uv").symlink_to(uv)
    assert installers.find(os.environ, {}, tmp_path / "uv-cache", empty).name == "uv"
    empty.chmod(0o777)  # anyone could put another uv there
    chosen = installers.find(os.environ, {}, tmp_path / "uv-cache", empty)
    assert chosen.name == "pip" and f"({empty}) is not root's or the gate's user's alone" in chosen.describe()
    empty.chmod(0o755)
    copy = tmp_path / "other" / "uv"
    copy.parent.mkdir()
    shutil.copy(uv, copy)
    copy.chmod(0o777)
    (empty / "uv").unlink()
    (empty / "uv").symlink_to(copy)
    chosen = installers.find(os.environ, {}, tmp_path / "uv-cache", empty)
    assert chosen.name == "pip" and "is not a file that only root or the gate's user can write" in chosen.describe()


def test_the_names_a_requirements_file_asks_for(tmp_path: Path) -> None:
    (tmp_path / "reqs").mkdir()
    (tmp_path / "reqs" / "base.txt").write_text("Attrs>=22 ; python_version >= '3.8'  # comment\n-c pins.txt\n")
    (tmp_path / "reqs" / "pins.txt").write_text("constrained-only==1\n")
    (tmp_path / "outside.txt").write_text("outside==1\n")
    (tmp_path / "reqs" / "test.txt").write_text(
        "# test dependencies\n-r base.txt\n--requirement=../outside.txt\n-r ../../etc/passwd\n"
        "pytest-cov==4.1 \\\n    --hash=sha256:abc\n--index-url https://example.org/simple\n"
        "-e git+https://example.org/x.git#egg=Editable_Thing\n"
        "https://example.org/dl/wheel_pkg-1.0-py3-none-any.whl\nnamed @ https://example.org/n.tar.gz\n"
        "./local-project\n")
    assert requirement_names(tmp_path / "reqs" / "test.txt", tmp_path / "reqs") == {
        "attrs", "pytest-cov", "editable-thing", "wheel-pkg", "named"}


def gate_without_uv(folder: Path) -> Path:
    """An interpreter of this gate with no uv beside it, as where the gate is installed without uv: a virtual
    environment of the same Python that imports what the gate's own environment holds (pip among it)."""
    base = Path(sys.base_prefix, "bin", f"python{sys.version_info[0]}.{sys.version_info[1]}")
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next(folder.glob("lib/python*/site-packages"))
    (site / "gate-env.pth").write_text(f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")
    return folder / "bin" / "python"


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="runs the gate in a network "
                    "namespace of its own (root, unshare)")
@pytest.mark.skipif(not WITH_UV, reason="uv is not beside the gate's interpreter")
def test_without_uv_pip_builds_the_same_environment_under_another_key_and_the_log_says_so(
        tmp_path: Path, offline_pip: Path) -> None:  # noqa: F811
    """The same base, offline (no network at all), by the gate with uv and by a gate installed without it: the
    same distributions and the same plugins, two cache entries (the key names the installer), the same verdict."""
    write_wheel(offline_pip, "pytest-measure", {"pytest_measure.py": "import pytest\n\n\n@pytest.fixture\n"
                                                "def measured():\n    return 3\n"},
                requires=("text-unidecode",), entry_points="[pytest11]\nmeasure = pytest_measure\n")
    repo = project_repo(tmp_path / "repo", {
        "pyproject.toml": pyproject("slugish", ["text-unidecode"], extras={"test": ["pytest-measure"]}),
        "requirements-dev.txt": "checkhelp  # the test helper\n", "slugify.py": SLUGIFY,
        "tests/test_slug.py": "from slugify import slugify\n\n\ndef test_slug(measured):\n"
                              "    assert slugify('Héllo W') == 'hello-w' and measured == 3\n",
        ".github/gate.yml": "environment: {extras: [test], requirements: [requirements-dev.txt]}\n"
                            "tests: {paths: [tests]}\n"})
    repo.commit("bot: a docstring", {"slugify.py": '"""Slugs."""\n' + SLUGIFY})
    cache = tmp_path / "cache"
    environ = {**os.environ, "GATE_CACHE_DIR": str(cache)}
    where = tmp_path / "cwd"  # (not above the cache: the runs never see the gate's working directory)
    where.mkdir()
    outcomes = []
    for python in (sys.executable, str(gate_without_uv(tmp_path / "no-uv"))):
        out = tmp_path / "verdict.json"
        done = subprocess.run(["unshare", "--net", python, "-m", "gate", "check", "--repo", str(repo.root),
                               "--base", "main", "--head", "bot", "--json", str(out)], cwd=where,
                              capture_output=True, text=True, env=environ, check=False, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        outcomes.append((done.stderr, json.loads(out.read_text())))
    (with_uv, verdict_uv), (with_pip, verdict_pip) = outcomes
    assert "environment is built by uv" in with_uv
    assert ("uv is not beside the gate's interpreter (" + str(tmp_path / "no-uv" / "bin" / "uv") + "): pip builds "
            "the environment instead") in with_pip
    entries = [json.loads(path.read_text()) for path in sorted(cache.glob("envs/*/gate-installed.json"))]
    assert len(entries) == 2 and entries[0] == entries[1]
    assert entries[0]["installed"] == ["checkhelp==1.0", "pytest-measure==1.0", "text-unidecode==1.0"]
    assert entries[0]["plugins"] == ["measure=pytest_measure"]
    for verdict in (verdict_uv, verdict_pip):
        assert verdict["accepted"]
        assert [case["status"] for case in verdict["cases"] if case["kind"] == "pytest"] == ["passed"]
