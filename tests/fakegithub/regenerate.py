"""Regenerate the trimmed GitHub REST description and webhook payloads that the fake GitHub serves.

    python tests/fakegithub/regenerate.py            # runs `npm pack` in a temporary directory
    python tests/fakegithub/regenerate.py --from DIR # DIR holds the unpacked packages (package/ layout)

Keeps only the operations the gate calls (OPERATIONS), every component they reference, and a few real webhook
payloads (WEBHOOKS). Published examples that do not match their own schema are patched (EXAMPLE_FIXES) and the
script fails if any other example does not validate, so a new upstream release cannot slip a bad one in.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OPENAPI_PACKAGE = "@octokit/openapi"
WEBHOOKS_PACKAGE = "@octokit/webhooks-examples"

# (method, path) of every REST operation the gate (through PyGithub) sends.
OPERATIONS = (
    ("get", "/rate_limit"),
    ("get", "/user"),
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
    ("get", "/repos/{owner}/{repo}/contents/{path}"),
    ("get", "/repos/{owner}/{repo}/git/blobs/{file_sha}"),  # a file over 1 MB, which contents sends without bytes
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("delete", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("post", "/repos/{owner}/{repo}/statuses/{sha}"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    # Who a PR's commits are by, and who may change how it is gated (labels, overrides).
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/commits"),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/events"),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
)

# (event, action or None): the first published example of each is kept.
WEBHOOKS = (
    ("pull_request", "opened"),
    ("pull_request", "synchronize"),
    ("pull_request", "labeled"),
    ("issue_comment", "created"),
    ("merge_group", "checks_requested"),
    ("workflow_dispatch", None),
    ("workflow_run", "completed"),
)

# Published examples that contradict their own schema, and the smallest change that makes them valid.
# Each entry: example component name -> list of (JSON pointer inside the example value, replacement).
# README.md next to this script lists them with the reason.
EXAMPLE_FIXES: dict[str, list[tuple[str, Any]]] = {
    # `language` is required (nullable) in full-repository, but the example leaves it out twice.
    "full-repository-default-response": [("/language", None), ("/source/language", None)],
    # `type` is required in team, but the example's requested team has none.
    "pull-request": [("/requested_teams/0/type", "organization")],
    # GET /user's schema tells its two shapes apart by `user_view_type` (a discriminator), which neither
    # example has.
    "private-user-response-with-public-and-private-profile-information": [("/user_view_type", "private")],
    "private-user-response-with-public-profile-information": [("/user_view_type", "public")],
    # `role_name` is required in the collaborator the permission names, but the example's user has none.
    "repository-collaborator-permission-response-if-user-has-admin-permissions": [("/user/role_name", "admin")],
}

# Places where the published schema itself is wrong for what GitHub sends (and for its own examples).
# Each entry: JSON pointer inside the trimmed description -> replacement.
SCHEMA_FIXES: dict[str, Any] = {
    # `conclusion` is nullable, but under OpenAPI 3.0.3 a nullable enum must list null to accept it: an
    # in-progress check run (the published example) has conclusion null.
    "/components/schemas/check-run/properties/conclusion/enum": [
        "success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required", None],
    # A discriminator only applies to object schemas; its "array" mapping makes openapi-core reject the
    # published directory listing. The oneOf alone tells the four shapes apart.
    "/paths/~1repos~1{owner}~1{repo}~1contents~1{path}/get/responses/200/content/application~1json/schema":
        {"oneOf": [{"$ref": "#/components/schemas/content-directory"},
                   {"$ref": "#/components/schemas/content-file"},
                   {"$ref": "#/components/schemas/content-symlink"},
                   {"$ref": "#/components/schemas/content-submodule"}]},
    # "You can also pass an `array` of labels directly", says the operation's own text, and PyGithub's
    # add_to_labels does; the schema only lists the object form. Add the array form it documents.
    "/paths/~1repos~1{owner}~1{repo}~1issues~1{issue_number}~1labels/post/requestBody/content/application~1json"
    "/schema/oneOf/1": {"type": "array", "minItems": 1, "items": {"type": "string"}},
    # A commit's `author` and `committer` (the GitHub accounts) are null when no account is linked to the git
    # identity, as GitHub sends them; the schema says nullable, but a nullable `oneOf` whose branches are all
    # objects rejects null under openapi-core. The nullable user branch says it.
    **{f"/components/schemas/commit/properties/{role}": {"oneOf": [
        {"$ref": "#/components/schemas/nullable-simple-user"}, {"$ref": "#/components/schemas/empty-object"}]}
       for role in ("author", "committer")},
}

# The fake serves JSON only; other media types of an operation are dropped from the trimmed copy.
MEDIA_TYPES = ("application/json",)


def npm_pack(package: str, into: Path) -> Path:
    """`npm pack` one package into `into` and unpack it; returns its `package/` directory."""
    out = subprocess.run(["npm", "pack", package, "--silent"], cwd=into, check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    target = into / package.replace("/", "_")
    with tarfile.open(into / out) as tar:
        tar.extractall(target, filter="data")
    return target / "package"


def refs_in(node: Any) -> set[str]:
    """Every `$ref` string anywhere inside `node`."""
    found: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            found.add(node["$ref"])
        for value in node.values():
            found |= refs_in(value)
    elif isinstance(node, list):
        for value in node:
            found |= refs_in(value)
    return found


def trim(spec: dict[str, Any]) -> dict[str, Any]:
    """The description restricted to OPERATIONS and the components they reach."""
    paths: dict[str, Any] = {}
    for method, path in OPERATIONS:
        item = spec["paths"][path]
        kept = paths.setdefault(path, {k: v for k, v in item.items() if k == "parameters"})
        kept[method] = json_only(item[method])
    components: dict[str, dict[str, Any]] = {}
    pending = refs_in(paths)
    seen: set[str] = set()
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, kind, name = ref.split("/", 3)
        value = spec["components"][kind][name]
        components.setdefault(kind, {})[name] = value
        pending |= refs_in(value)
    trimmed: dict[str, Any] = {
        "openapi": spec["openapi"],
        "info": spec["info"],
        "servers": spec["servers"],
        "paths": paths,
        "components": {kind: dict(sorted(v.items())) for kind, v in sorted(components.items())},
    }
    return trimmed


def json_only(operation: dict[str, Any]) -> dict[str, Any]:
    """A copy of `operation` whose inline responses keep only MEDIA_TYPES."""
    copy: dict[str, Any] = json.loads(json.dumps(operation))
    for response in copy["responses"].values():
        if "content" in response:
            response["content"] = {k: v for k, v in response["content"].items() if k in MEDIA_TYPES}
    return copy


def set_pointer(doc: Any, pointer: str, value: Any) -> None:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    last = parts[-1]
    if isinstance(doc, list) and int(last) == len(doc):
        doc.append(value)
    elif isinstance(doc, list):
        doc[int(last)] = value
    else:
        doc[last] = value


def example_errors(spec: dict[str, Any]) -> list[str]:
    """Each response example that openapi-core (the fake's own validator) rejects against its operation."""
    from openapi_core import OpenAPI
    from openapi_core.testing import MockRequest, MockResponse

    api = OpenAPI.from_dict(spec)
    errors = []
    for path, item in spec["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "1", path)
        for method, op in item.items():
            if method == "parameters":
                continue
            for status, response in op["responses"].items():
                response = resolve(spec, response)
                for media, content in response.get("content", {}).items():
                    for ref in content.get("examples", {}).values():
                        name = ref["$ref"].rsplit("/", 1)[-1]
                        value = spec["components"]["examples"][name]["value"]
                        request = MockRequest("https://api.github.com", method, concrete)
                        answer = MockResponse(json.dumps(value).encode(), int(status), content_type=media)
                        try:
                            api.validate_response(request, answer)
                        except Exception as exc:  # report every kind of mismatch, then fail
                            detail = "; ".join(str(e)[:200] for e in getattr(exc, "schema_errors", ()))
                            errors.append(f"{method.upper()} {path} {status} {media} example {name}: "
                                          f"{type(exc).__name__}: {detail or str(exc)[:300]}")
    return errors


def resolve(spec: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        _, _, kind, name = node["$ref"].split("/", 3)
        node = spec["components"][kind][name]
    return node


def webhook_examples(index: list[dict[str, Any]]) -> dict[str, Any]:
    """The first published payload of each (event, action) in WEBHOOKS, keyed `event` or `event.action`."""
    by_event = {entry["name"]: entry["examples"] for entry in index}
    kept = {}
    for event, action in WEBHOOKS:
        example = next(e for e in by_event[event] if action is None or e.get("action") == action)
        kept[event if action is None else f"{event}.{action}"] = example
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", type=Path, help="directory with the unpacked packages")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.source:
            openapi_dir, webhooks_dir = args.source / "openapi", args.source / "webhooks"
        else:
            openapi_dir = npm_pack(OPENAPI_PACKAGE, Path(tmp))
            webhooks_dir = npm_pack(WEBHOOKS_PACKAGE, Path(tmp))
        spec = json.loads((openapi_dir / "generated" / "api.github.com.json").read_text(encoding="utf-8"))
        hooks = json.loads((webhooks_dir / "api.github.com" / "index.json").read_text(encoding="utf-8"))
        versions = {
            OPENAPI_PACKAGE: json.loads((openapi_dir / "package.json").read_text())["version"],
            WEBHOOKS_PACKAGE: json.loads((webhooks_dir / "package.json").read_text())["version"],
        }
        notice = (openapi_dir / "LICENSE").read_text(encoding="utf-8")
    trimmed = trim(spec)
    for pointer, value in SCHEMA_FIXES.items():
        set_pointer(trimmed, pointer, value)
    for name, fixes in EXAMPLE_FIXES.items():
        for pointer, value in fixes:
            set_pointer(trimmed["components"]["examples"][name]["value"], pointer, value)
    errors = example_errors(trimmed)
    for line in errors:
        print(line, file=sys.stderr)
    if errors:
        print(f"{len(errors)} published example(s) do not match their schema: add fixes to EXAMPLE_FIXES",
              file=sys.stderr)
        return 1
    trimmed["info"]["x-trimmed-from"] = versions
    (HERE / "api.github.com.json").write_text(json.dumps(trimmed, indent=1, sort_keys=False) + "\n")
    (HERE / "webhooks.json").write_text(json.dumps({"x-from": versions[WEBHOOKS_PACKAGE],
                                                    **webhook_examples(hooks)}, indent=1) + "\n")
    (HERE / "LICENSE").write_text("The files api.github.com.json and webhooks.json are trimmed from the npm "
                                  f"packages {OPENAPI_PACKAGE} and {WEBHOOKS_PACKAGE}:\n\n" + notice)
    print(f"wrote {HERE / 'api.github.com.json'} ({len(trimmed['paths'])} paths) and webhooks.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
