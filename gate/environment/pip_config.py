"""The user's pip configuration, read as pip reads it for `pip install`, so that uv installs from the same places.

pip reads its configuration files in this order, each overriding the one before (pip's `Configuration`): the
global ones (`pip/pip.conf` under each of `XDG_CONFIG_DIRS`, by default /etc/xdg, then /etc/pip.conf), the
user's (~/.pip/pip.conf, then `$XDG_CONFIG_HOME/pip/pip.conf`: skipped when `PIP_CONFIG_FILE` names a file
that exists), the site's (pip.conf in the prefix of the Python that runs pip: the gate's), then
`PIP_CONFIG_FILE`'s (`PIP_CONFIG_FILE=/dev/null`: no file at all); then the `PIP_*` variables. Of each file the
`[global]` section, then `[install]` over it; the variables over both. A list option (`find-links`,
`extra-index-url`, `trusted-host`, `constraint`) is split on white space and replaces what came before; a
switch is pip's yes/no, true/false, on/off or 1/0; an empty value is no value. `settings` gives the options in
force, each with the place it came from, `uv_arguments` what uv is told of them, `key` what of them the
environment's cache key holds.
"""

from __future__ import annotations

import configparser
import hashlib
import locale
import math
import os
from collections.abc import Mapping
from pathlib import Path

import msgspec

from gate.errors import GateFailure

# pip's options whose value is a list (pip splits a configured one on white space).
_LISTS = frozenset({"find-links", "extra-index-url", "trusted-host", "constraint", "config-settings"})
# Switches (pip's store_true and store_false options, set from a configured yes/no).
_SWITCHES = frozenset({"no-index", "pre", "no-deps", "require-hashes", "no-build-isolation", "prefer-binary"})
_ALIASES = {"default-timeout": "timeout"}
# Options that change nothing of what an install into a fresh virtual environment holds, nor where it comes from.
_NO_EFFECT = frozenset({
    "disable-pip-version-check", "no-input", "quiet", "verbose", "log", "log-file", "no-color", "progress-bar",
    "root-user-action", "require-virtualenv", "break-system-packages", "no-warn-script-location",
    "no-warn-conflicts", "exists-action", "compile", "no-compile", "python", "isolated", "debug",
    "no-python-version-warning", "upgrade", "upgrade-strategy", "force-reinstall",
    "ignore-installed", "resume-retries"})
# How the connection is made, not what is installed: left out of the cache key.
_TRANSPORT = frozenset({"cert", "client-cert", "proxy", "timeout", "retries", "no-cache-dir", "cache-dir",
                        "trusted-host", "keyring-provider"})
_TRUE = ("y", "yes", "t", "true", "on", "1")
_FALSE = ("n", "no", "f", "false", "off", "0")


class Setting(msgspec.Struct, frozen=True):
    """One option in force: its name (pip's long option), its value, and where it was set (a file, a variable)."""

    name: str
    value: str | tuple[str, ...] | bool
    source: str


def files(environ: Mapping[str, str], site_prefix: str) -> list[tuple[str, str]]:
    """(variant, path) of each configuration file pip would read, the one read last winning."""
    home = environ.get("HOME") or os.path.expanduser("~")
    xdg_dirs = [os.path.expanduser(d.rstrip("/")) for d in (environ.get("XDG_CONFIG_DIRS", "").strip()
                                                                  or "/etc/xdg").split(os.pathsep)]
    found = [("global", os.path.join(d, "pip", "pip.conf")) for d in xdg_dirs] + [("global", "/etc/pip.conf")]
    named = environ.get("PIP_CONFIG_FILE")
    if named and not os.path.isabs(named):
        raise GateFailure(_relative(named), key="PIP_CONFIG_FILE")
    if not (named and os.path.exists(named)):
        user_dir = environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(home, ".config")
        found += [("user", os.path.join(home, ".pip", "pip.conf")), ("user", os.path.join(user_dir, "pip", "pip.conf"))]
    found.append(("site", os.path.join(site_prefix, "pip.conf")))
    if named is not None:
        if named == os.devnull:
            return []
        found.append(("PIP_CONFIG_FILE", named))
    return found


def settings(environ: Mapping[str, str], site_prefix: str) -> dict[str, Setting]:
    """The options pip's `install` would take from its configuration, by name (see the module's docstring).
    GateFailure (exit 3: pip would refuse them too, and the policy cannot mend them) for a file pip could not
    parse or a switch that is neither a yes nor a no; GateFailure too for a relative PIP_CONFIG_FILE or
    constraint file, which pip reads from the folder it runs in (the base's export), not the gate's."""
    merged: dict[str, tuple[str, str]] = {}  # "section.name" -> (value, source), later files winning
    for _, path in files(environ, site_prefix):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding=locale.getpreferredencoding(False))
        except configparser.MissingSectionHeaderError as exc:
            raise GateFailure("pip's configuration file does not parse: a line before any [section]", file=path,
                              line=exc.lineno) from None
        except configparser.ParsingError as exc:
            line = exc.errors[0][0]
            text = Path(path).read_text(encoding=locale.getpreferredencoding(False)).splitlines()[line - 1]
            raise GateFailure(f"pip's configuration file does not parse: {text.strip()!r} is not a `name = value` "
                              "line", file=path, line=line) from None
        except configparser.Error as exc:  # a section or an option given twice in one file
            raise GateFailure(f"pip's configuration file does not parse: {exc.message}", file=path,
                              line=getattr(exc, "lineno", None)) from None
        except UnicodeDecodeError as exc:
            raise GateFailure(f"pip's configuration file does not decode: {exc}", file=path) from None
        for section in parser.sections():
            for name, value in parser.items(section):
                merged[f"{section}.{_normal(name)}"] = (value, path)
    for variable, value in environ.items():
        # (PIP_CONFIG_FILE names a file, no option: pip's parser finds no --config-file and passes over it.)
        if variable.startswith("PIP_") and variable[4:].lower() not in ("version", "help", "config_file"):
            merged[f":env:.{_normal(variable[4:])}"] = (value, variable)
    found: dict[str, Setting] = {}
    for section in ("global", "install", ":env:"):
        for key, (value, source) in merged.items():
            scope, _, name = key.partition(".")
            if scope != section or not value:
                continue
            name = _ALIASES.get(name, name)
            found[name] = Setting(name, _value(name, value, source), source)
    if "constraint" in found:  # (its text, read here, is in the key; the installer reads it in the base's export)
        _absolute(found["constraint"])
    return found


def _absolute(setting: Setting) -> None:
    """GateFailure for a relative path among the files `setting` names (a URL is none)."""
    for path in setting.value if isinstance(setting.value, tuple) else ():
        if os.path.isabs(path) or path.partition(":")[0].lower() in ("http", "https", "file"):
            continue
        if setting.source.startswith("PIP_"):
            raise GateFailure(_relative(path), key=setting.source)
        raise GateFailure(_relative(path), file=setting.source, key=setting.name)


def _relative(path: str) -> str:
    return (f"{path!r} is a relative path, which pip would read from the folder it runs in (the base's export), "
            "not from the one the gate was started in: give an absolute path")


def _normal(name: str) -> str:
    name = name.lower().replace("_", "-")
    return name[2:] if name.startswith("--") else name


def _value(name: str, value: str, source: str) -> str | tuple[str, ...] | bool:
    if name in _LISTS:
        return tuple(value.split())
    if name in _SWITCHES:
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        said = f"{value!r} is not a yes or a no for pip's {name} (yes/no, true/false, on/off, 1/0)"
        if source.startswith("PIP_"):
            raise GateFailure(said, key=source)
        raise GateFailure(said, file=source, key=name)
    return value


class ForUv(msgspec.Struct, frozen=True):
    """What uv is told of pip's settings: its own options, its environment variables, and what it cannot be
    told (pip's option names, with why)."""

    arguments: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]
    carried: tuple[str, ...]  # "name (where it was set)"
    not_carried: tuple[str, ...]


def for_uv(found: Mapping[str, Setting], environ: Mapping[str, str]) -> ForUv:
    """The settings `found` as uv's options and variables (values stay out of `carried`: an index URL may hold
    a token)."""
    args: list[str] = []
    env: dict[str, str] = {}
    carried: list[str] = []
    skipped: list[str] = []
    for setting in found.values():
        name, value = setting.name, setting.value
        mapped = _uv_option(name, value, args, env)
        if mapped is None:
            if name not in _NO_EFFECT:
                skipped.append(f"{name} ({setting.source})")
        elif mapped:
            skipped.append(f"{name} ({setting.source}): {mapped}")
        else:
            carried.append(f"{name} ({setting.source})")
    if "cert" not in found:  # pip's requests honours these when pip's own `cert` is not set
        bundle = environ.get("REQUESTS_CA_BUNDLE") or environ.get("CURL_CA_BUNDLE")
        if bundle:
            args += ["--cert", bundle]
            carried.append("REQUESTS_CA_BUNDLE" if environ.get("REQUESTS_CA_BUNDLE") else "CURL_CA_BUNDLE")
    return ForUv(tuple(args), tuple(sorted(env.items())), tuple(carried), tuple(skipped))


def _uv_option(name: str, value: str | tuple[str, ...] | bool, args: list[str], env: dict[str, str]
               ) -> str | None:
    """Add uv's form of pip's option `name` to `args` or `env`: "" when it did, why not when it cannot, None
    for an option it has no form of."""
    many = value if isinstance(value, tuple) else (str(value),)
    flags = {"index-url": "--default-index", "extra-index-url": "--index", "find-links": "--find-links",
             "trusted-host": "--allow-insecure-host", "constraint": "--constraints", "cert": "--cert",
             "config-settings": "--config-setting"}
    switches = {"no-index": "--no-index", "no-deps": "--no-deps", "require-hashes": "--require-hashes"}
    if name in flags:
        for item in many:
            args += [flags[name], os.path.expanduser(item) if name == "cert" else item]
    elif name in switches:
        args += [switches[name]] if value is True else []
    elif name == "pre":
        args += ["--prerelease", "allow"] if value is True else []
    elif name == "no-build-isolation":
        # pip's quirk, kept: the option stores False, and a configured value is taken as it is, so
        # `no-build-isolation = no` (PIP_NO_BUILD_ISOLATION=0) is what turns isolation off.
        args += ["--no-build-isolation"] if value is False else []
    elif name in ("only-binary", "no-binary"):
        for item in str(value).split(","):
            args += [f"--{name}", item.strip()] if item.strip() else []
    elif name == "no-cache-dir":  # any value: pip's callback turns the cache off whatever it says
        args.append("--no-cache")
    elif name == "client-cert":
        env["SSL_CLIENT_CERT"] = os.path.expanduser(str(value))
    elif name == "proxy":
        env["HTTP_PROXY"] = env["HTTPS_PROXY"] = str(value)
    elif name in ("timeout", "retries"):
        try:
            number = math.ceil(float(str(value)))
        except ValueError:
            return "not a number"
        env["UV_HTTP_TIMEOUT" if name == "timeout" else "UV_HTTP_RETRIES"] = str(number)
    elif name == "keyring-provider":
        if value not in ("disabled", "subprocess"):
            return f"uv has only the disabled and subprocess providers, not {value}"
        args += ["--keyring-provider", str(value)]
    elif name == "cache-dir":
        return "uv keeps a cache of its own"
    elif name == "prefer-binary":
        return "uv has no such preference" if value is True else ""
    else:
        return None
    return ""


def key(found: Mapping[str, Setting]) -> dict[str, object]:
    """What of the settings changes what an install resolves to (the index, extra indexes, local wheels,
    constraints and their text, pre-releases, ...): the environment's cache key holds it. Values may hold a
    token: the key keeps only a hash."""
    kept: dict[str, object] = {}
    for name, setting in sorted(found.items()):
        if name in _NO_EFFECT or name in _TRANSPORT:
            continue
        kept[name] = setting.value
        if name == "constraint" and isinstance(setting.value, tuple):
            kept["constraint-text"] = [_text_hash(item) for item in setting.value]
    return kept


def _text_hash(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""
