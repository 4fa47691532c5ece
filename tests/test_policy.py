"""Policy files as a repository owner writes them: errors, `extends:`, presets, `gate policy check|show`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from gate import generate, memo
from gate.cases.specs import kind_keys, parse_cases
from gate.checks.smoke import SMOKE
from gate.cli import main
from gate.errors import BadInput
from gate.policy import marked_yaml
from gate.policy.model import CaseSpec, ImportRules, Points, Policy, changed
from gate.policy.validation import _content
from gate.policy_file import effective_policy_dict, load_policy, load_preset, policy_schema, preset_names

# (file text, line, key path, words the message must have). The line and key are where a user would look.
ERRORS = [
    pytest.param('budgett: 3\n', 1, 'budgett',
                 'unknown key; did you mean `budget`?', id='unknown-key'),
    pytest.param('budget: 3\npoints:\n  smok: 2\n', 3, 'points.smok',
                 'did you mean `smoke`?', id='nested-unknown'),
    pytest.param('smoke: 2\n', 1, 'smoke',
                 'did you mean `points.smoke`?', id='key-in-wrong-section'),
    pytest.param('budget: 2\ntimeout: 2\n', 2, 'timeout',
                 'did you mean `points.timeout`, `limits.timeout`, `judge.timeout` or `tests.timeout`?',
                 id='key-in-sections'),
    pytest.param('budget: three\n', 1, 'budget',
                 "expected an integer, got the string 'three'", id='wrong-type'),
    pytest.param("paths:\n  include: '**/*.py'\n", 2, 'paths.include',
                 'expected a list', id='string-for-list'),
    pytest.param('python: 3.10\n', 1, 'python',
                 'quote it', id='unquoted-version'),
    pytest.param('budget: -1\n', 1, 'budget',
                 'must not be negative', id='negative-budget'),
    pytest.param('points:\n  parse: 5\n  smoke: -2\n', 3, 'points.smoke',
                 'must not be negative', id='negative-points'),
    pytest.param('runs: 0\n', 1, 'runs',
                 'must be at least 1', id='zero-runs'),
    pytest.param('mode: enforcing\n', 1, 'mode',
                 'expected one of enforce, advisory', id='bad-enum'),
    pytest.param("paths:\n  exclude:\n    - docs/**\n    - 'src/[abc.py'\n", 4, 'paths.exclude[1]',
                 "bad glob 'src/[abc.py': unclosed `[`", id='bad-glob'),
    pytest.param("bots:\n  branches: ['/abs*']\n", 2, 'bots.branches[0]',
                 'relative', id='absolute-glob'),
    pytest.param("bots:\n  patterns: ['my-agent[bot']\n", 2, 'bots.patterns[0]',
                 "'my-agent[bot': a login pattern holds letters, digits", id='bad-login-pattern'),
    pytest.param("bots:\n  agents: [copilot, codx]\n", 2, 'bots.agents[1]',
                 "no such agent in gate/bots/agents.yml", id='unknown-agent'),
    pytest.param("paths:\n  include: ['./src/*.py']\n", 2, 'paths.include[0]',
                 'globs match paths as git writes them, without `.` or `..` parts', id='dot-slash-glob'),
    pytest.param('imports:\n  allow: [sys, os]\n', 2, 'imports.allow[1]',
                 "'os' is both allowed and denied (imports.deny comes from the default preset",
                 id='allowed-and-denied'),
    pytest.param('imports:\n  deny: [json]\n  allow:\n    - json\n', 4, 'imports.allow[0]',
                 "'json' is both allowed and denied", id='allowed-and-denied-own'),
    pytest.param('imports:\n  allow: [os.]\n', 2, 'imports.allow[0]',
                 'dotted module name', id='bad-module'),
    pytest.param('budget: 1\nextends: strct\n', 2, 'extends',
                 "no preset named 'strct' (the presets are advisory, default, strict); "
                 "did you mean `strict`?",
                 id='unknown-preset'),
    pytest.param('budget: 1\npoints: [\n', 3, None,
                 'YAML syntax error', id='yaml-syntax'),
    pytest.param('budget: 1\nbudget: 2\n', 2, 'budget',
                 'duplicate key (first given at line 1)', id='duplicate-key'),
    pytest.param('- budget: 1\n', 1, None,
                 'expected a mapping of policy keys at the top level, got a list', id='top-level-list'),
    pytest.param("languages:\n  js:\n    command: [node, '{path}']\n", 2, 'languages.js',
                 'a file extension such as `.js`', id='language-key'),
    pytest.param('languages:\n  .js:\n    command: [node, --check]\n', 3, 'languages[".js"].command',
                 '`{path}`', id='language-without-path'),
    pytest.param('require: [setsid, seccom]\n', 1, 'require[1]',
                 'did you mean `seccomp`?', id='unknown-layer'),
    pytest.param('bots:\n  labels:\n    opt_in: [yes]\n', 3, 'bots.labels.opt_in[0]',
                 'got the boolean true (quote it', id='yaml-boolean'),
    pytest.param('limits:\n  timeout: 0\n', 2, 'limits.timeout',
                 'must be greater than 0', id='zero-timeout'),
    pytest.param('judge:\n  needs_review: blok\n', 2, 'judge.needs_review',
                 'did you mean `block`?', id='judge-enum'),
    pytest.param('judge:\n  enabled: true\n  model: small\n', 2, 'judge.url',
                 'judge.url is required', id='judge-without-url'),
    pytest.param("judge:\n  enabled: true\n  url: https://judge.example/v1\n  model: ''\n", 4, 'judge.model',
                 'judge.model is required', id='judge-without-model'),
    pytest.param("cases:\n  - stdin: '1'\n    stdoutt: '2'\n", 3, 'cases[0].stdoutt',
                 'did you mean `stdout`?', id='case-unknown-key'),
    pytest.param("cases:\n  - stdin: '1'\n    stdout: '1'\n  - stdin: '2'\n    expect: 2\n",
                 5, 'cases[1].expect',
                 'not a key of a stdio case (it belongs to a call case)', id='case-mixed-kinds'),
    pytest.param('cases:\n  - args: [1]\n', 2, 'cases[0]',
                 'exactly one of `expect` or `error`', id='call-without-expect'),
    pytest.param('cases:\n  - args: [1]\n    expect: 1\n    error: ValueError\n', 2, 'cases[0]',
                 'exactly one of `expect` or `error`', id='call-with-both'),
    pytest.param('cases:\n  - name: x\n', 2, 'cases[0]',
                 "cannot tell the case's kind", id='case-without-kind'),
    pytest.param('cases:\n  - kind: mbpp\n    tests: []\n', 3, 'cases[0].tests',
                 'at least 1 item', id='mbpp-empty-tests'),
    pytest.param("cases:\n  - stdout_regex: '(a'\n", 2, 'cases[0].stdout_regex',
                 'not a valid regular expression', id='bad-regex'),
    pytest.param("cases:\n  - {name: a, stdin: ''}\n  - {name: a, stdin: ''}\n", 3, 'cases[1].name',
                 "two cases are named 'a' (the first at line 2)", id='duplicate-case-name'),
]


def _only_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(("text", "line", "key", "words"), ERRORS)
def test_each_error_is_one_line_naming_file_line_and_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         text: str, line: int, key: str | None,
                                                         words: str) -> None:
    policy_file = tmp_path / "gate.yml"
    policy_file.write_text(text)

    assert main(["policy", "check", str(policy_file)]) == 2

    captured = capsys.readouterr()
    where = f"gate: error: {policy_file}:{line}: " + (f"{key}: " if key else "")
    error = _only_error_line(captured.err)
    assert error.startswith(where), error
    assert words in error
    assert captured.out == ""


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_an_empty_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    policy_file = tmp_path / "gate.yml"
    policy_file.write_text(text)
    assert main(["policy", "check", str(policy_file)]) == 2
    assert _only_error_line(capsys.readouterr().err) == f"gate: error: {policy_file}: the file is empty; " \
        "expected a mapping of policy keys (budget, points, ...)"


BOMB = "".join(f"{name}: &{name} [" + ", ".join([f"*{prev}" if prev else "1"] * 10) + "]\n"
               for prev, name in zip(["", *"abcdef"], "abcdefg", strict=True))


@pytest.mark.parametrize(("text", "words"), [
    pytest.param("a:\n\t- 1\n", ":2: YAML syntax error: found character '\\t'", id="tab"),
    pytest.param("a: &x\n  b: *x\n", ":1: a YAML alias refers to its own parent", id="recursive-alias"),
    pytest.param(BOMB, ": too many values (over 100000; YAML aliases expand)", id="alias-bomb"),
    pytest.param("a: " + "[" * 5000 + "]" * 5000 + "\n", ": the YAML is nested too deeply", id="deep"),
    pytest.param("1: 2\n", ":1: keys must be strings, got the integer 1", id="number-key"),
    pytest.param("budget: 3\n\x00\x01\n", ":2: not YAML text: control character U+0000 (a binary file?)",
                 id="binary"),
])
def test_hostile_or_odd_yaml_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                          words: str) -> None:
    policy_file = tmp_path / "gate.yml"
    policy_file.write_text(text)
    assert main(["policy", "check", str(policy_file)]) == 2
    assert words in _only_error_line(capsys.readouterr().err)


def test_a_named_file_that_does_not_exist_is_an_error(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "check", str(tmp_path / "nope.yml")]) == 2
    assert _only_error_line(capsys.readouterr().err) == f"gate: error: {tmp_path / 'nope.yml'}: no such policy file"


def test_a_real_process_reports_bad_input_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "gate.yml").write_text("budget: 3\npoints:\n  smoke: -1\n")
    done = subprocess.run([sys.executable, "-m", "gate", "policy", "check", "gate.yml"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2
    error = "gate: error: gate.yml:3: points.smoke: must not be negative, got -1"
    assert _only_error_line(done.stderr) == error


def test_check_accepts_a_valid_file_and_names_its_preset(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    policy_file = tmp_path / "gate.yml"
    policy_file.write_text("extends: strict\nbudget: 2\n")
    assert main(["policy", "check", str(policy_file)]) == 0
    assert capsys.readouterr().out == f"ok: {policy_file} (extends strict)\n"


def test_without_a_policy_file_the_default_preset_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["policy", "check"]) == 0
    assert capsys.readouterr().out == "no .github/gate.yml: the default preset applies\n"
    assert load_policy(None) == Policy()
    assert load_policy(None).source == "default preset"


def test_check_reads_github_gate_yml_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "gate.yml").write_text("budgte: 4\n")
    monkeypatch.chdir(tmp_path)
    assert main(["policy", "check"]) == 2
    assert _only_error_line(capsys.readouterr().err).startswith("gate: error: .github/gate.yml:1: budgte: ")


def test_text_from_a_commit_is_named_by_its_source() -> None:
    with pytest.raises(BadInput) as caught:
        load_policy(None, text="budget: 1\nmode: loud\n", source=".github/gate.yml@abc1234")
    assert caught.value.render().startswith(".github/gate.yml@abc1234:2: mode: expected one of enforce")
    policy = load_policy(None, text="budget: 1\n", source=".github/gate.yml@abc1234")
    assert (policy.source, policy.budget, policy.extends) == (".github/gate.yml@abc1234", 1, "default")


def test_extends_overrides_only_the_keys_the_file_names() -> None:
    text = "extends: strict\npoints:\n  smoke: 7\npaths:\n  include: ['src/**/*.py']\nbots:\n  labels:\n" \
           "    opt_out: [skip-gate]\n"
    policy = load_policy(None, text=text, source="gate.yml")
    strict = load_preset("strict")
    assert policy.points == Points(**(dict(strict.points.items()) | {"smoke": 7}))
    assert policy.paths.include == ("src/**/*.py",)  # a list replaces the preset's list
    assert policy.paths.exclude == strict.paths.exclude
    assert policy.bots == changed(strict.bots, labels=changed(strict.bots.labels, opt_out=("skip-gate",)))
    assert changed(policy, points=strict.points, paths=strict.paths, bots=strict.bots, source=strict.source,
                   extends=strict.extends) == strict


def test_a_file_without_extends_starts_from_the_default_preset() -> None:
    policy = load_policy(None, text="budget: 10\n", source="gate.yml")
    assert changed(policy, budget=3, source="default preset", extends=None) == Policy()


def test_the_default_preset_spells_out_the_model_defaults() -> None:
    assert load_preset("default") == Policy()
    # Every key spelled out, so a reader sees the whole schedule in one file.
    text = (resources.files("gate") / "presets" / "default.yml").read_text()
    spelled_out = {k: v for k, v in effective_policy_dict(Policy()).items() if k != "extends"}
    assert yaml.safe_load(text) == spelled_out


def test_the_generated_schemas_default_preset_and_docs_rows_are_current() -> None:
    # They are written from the declarations in gate/policy/model.py, the checks' charges (gate/checks/) and
    # gate/cases/ by the generator: the docs' rows are the `points.*` reference and the penalty schedule.
    assert generate.stale() == []
    assert generate.main(["--check"]) == 0


def test_the_schema_gives_every_key_a_default_and_names_itself() -> None:
    schema = json.loads((resources.files("gate") / "policy" / "schema.json").read_text())
    assert schema["$id"].endswith("/gate/policy/schema.json")
    def missing(node: dict[str, Any], where: str) -> list[str]:
        found = []
        for name, sub in node.get("properties", {}).items():
            if "default" not in sub:
                found.append(where + name)
            found += missing(sub, f"{where}{name}.")
        return found
    assert missing(schema, "") == []
    assert schema["properties"]["limits"]["properties"]["timeout"]["default"] == 5.0
    assert schema["properties"]["imports"]["properties"]["deny"]["default"] == list(ImportRules().deny)


@pytest.mark.parametrize("name", ["default", "strict", "advisory"])
def test_every_preset_validates(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert name in preset_names()
    preset = resources.files("gate") / "presets" / f"{name}.yml"
    schema = json.loads((resources.files("gate") / "policy" / "schema.json").read_text())
    assert list(Draft202012Validator(schema).iter_errors(yaml.safe_load(preset.read_text()))) == []
    assert load_preset(name).source == f"{name} preset"
    assert main(["policy", "check", str(preset)]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_strict_and_advisory_presets_mean_what_they_say() -> None:
    strict, advisory = load_preset("strict"), load_preset("advisory")
    assert strict.budget == 0 and strict.runs == 3 and strict.imports.scope == "all"
    assert strict.imports.allow and not set(strict.imports.allow) & set(strict.imports.deny)
    assert {"rlimits", "setsid"} <= set(strict.require)
    assert advisory.mode == "advisory"
    assert changed(advisory, mode="enforce", source="default preset", extends=None) == Policy()


def test_show_prints_the_effective_policy_and_it_loads_back(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    policy_file = tmp_path / "gate.yml"
    policy_file.write_text(
        "extends: strict\nbudget: 4\nlanguages:\n  .js: {command: [node, --check, '{path}'], timeout: 3}\n"
        "cases:\n  - {stdin: '2', stdout: '4'}\n"
        "  - {name: neg, args: [-1], kwargs: {strict: true}, expect: null}\n"
        "judge: {enabled: true, url: 'http://127.0.0.1:1/v1', model: m, rubric_file: rubric.md}\n")
    assert main(["policy", "show", str(policy_file)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"# effective policy: {policy_file} (extends strict)\n")
    (tmp_path / "shown.yml").write_text(shown)
    original = load_policy(policy_file)
    reloaded = load_policy(tmp_path / "shown.yml")
    assert reloaded == changed(original, source=str(tmp_path / "shown.yml"))
    assert original.languages[0].timeout == 3.0
    assert [case.name for case in original.cases] == ["case 1", "neg"]


def test_the_schema_is_valid_and_printed_for_editors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policy", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert main(["policy", "schema", "--task"]) == 0
    task_schema = json.loads(capsys.readouterr().out)
    Draft202012Validator.check_schema(task_schema)
    # The task schema carries its own copy of the case definitions, so an editor needs one file.
    assert task_schema["$defs"] == schema["$defs"]


def test_the_judge_block_accepts_every_field() -> None:
    text = ("judge:\n  enabled: true\n  url: https://judge.example/v1/chat\n  model: small\n"
            "  api_key_env: MY_KEY\n  rubric: Is it right?\n  rubric_file: null\n  timeout: 12\n"
            "  retries: 0\n"
            "  add_points: true\n  needs_review: label\n  label: look-at-me\npoints: {judge: 2}\n")
    judge = load_policy(None, text=text, source="gate.yml").judge
    assert (judge.enabled, judge.timeout, judge.retries) == (True, 12.0, 0)
    assert (judge.needs_review, judge.label, judge.add_points) == ("label", "look-at-me", True)


def _inferred_kind_keys(schema: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """The schema's rule for a case without `kind`: a chain of if (any of these keys) / then (this kind)."""
    chain, node = [], schema["$defs"]["inferred_case"]
    while "if" in node:
        keys = tuple(rule["required"][0] for rule in node["if"]["anyOf"])
        chain.append((node["then"]["$ref"].split("/")[-1].removesuffix("_case"), keys))
        node = node["else"]
    return chain


def test_the_schema_and_the_loader_infer_a_case_kind_alike() -> None:
    schema = json.loads((resources.files("gate") / "policy" / "schema.json").read_text())
    assert _inferred_kind_keys(schema) == list(kind_keys())


def test_parse_cases_infers_kinds_and_keeps_plain_json_values() -> None:
    text = ("cases:\n  - {stdin: '1 2', stdout: '3'}\n  - {name: call, args: [[1, 2]], kwargs: {flag: true},"
            " expect: {a: null}}\n  - {kind: mbpp, tests: ['assert f(1) == 1']}\n"
            "  - {entry_point: f, prompt: 'def f(x): pass', test: 'def check(c): pass'}\n")
    cases = load_policy(None, text=text, source="gate.yml").cases
    assert [(c.kind, c.name) for c in cases] == [("stdio", "case 1"), ("call", "call"), ("mbpp", "case 3"),
                                                 ("humaneval", "case 4")]
    call = cases[1]
    assert call.get("kwargs") == {"flag": True} and call.get("expect") == {"a": None}
    # Values cross into strict comparisons: exact builtin types, no YAML-marked subclasses.
    assert type(call.get("args")) is list and type(call.get("args")[0]) is list
    assert type(call.get("kwargs")) is dict and type(call.get("expect")) is dict


def test_parse_cases_works_on_plain_json_data_and_marks_hidden_cases() -> None:
    cases = parse_cases([{"args": [1], "error": "ValueError"}], "hidden.json", "cases", hidden=True)
    assert cases == (CaseSpec("call", "case 1", (("args", [1]), ("error", "ValueError")), hidden=True),)
    with pytest.raises(BadInput) as caught:
        parse_cases([{"stdin": 1}], "row.jsonl:7", "HumanEval/3")
    assert caught.value.render() == ("row.jsonl:7: HumanEval/3[0].stdin: expected a string, "
                                     "got the integer 1 (quote it to make it a string)")


def _readme_policy_section() -> str:
    reference = (Path(__file__).parent.parent / "docs" / "policy.md").read_text()
    return reference.split("## Policy reference", 1)[1].split("\n## ", 1)[0]


def test_the_readme_example_policy_loads() -> None:
    example = _readme_policy_section().split("```yaml\n", 1)[1].split("```", 1)[0]
    policy = load_policy(None, text=example, source="docs/policy.md")
    assert (policy.budget, policy.points[SMOKE], [c.kind for c in policy.cases]) == (4, 3, ["call", "stdio"])


def _leaf_keys(schema: dict[str, Any], prefix: str = "") -> list[str]:
    keys: list[str] = []
    for name, sub in schema.get("properties", {}).items():
        keys.extend(_leaf_keys(sub, f"{prefix}{name}.") if "properties" in sub else [prefix + name])
    return keys


def test_the_readme_documents_every_policy_key() -> None:
    section = _readme_policy_section()
    schema = json.loads((resources.files("gate") / "policy" / "schema.json").read_text())
    missing = [key for key in _leaf_keys(schema) if f"`{key}`" not in section]
    assert missing == []


def test_a_reader_that_goes_away_gets_one_line_not_a_traceback(tmp_path: Path) -> None:
    # `gate policy schema | head -1`: the pipe's reader is closed before the gate writes (nothing reads it).
    proc = subprocess.Popen([sys.executable, "-m", "gate", "policy", "schema"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait() == 3
    assert err == "gate: error: the output was closed before the report was written (broken pipe)\n"


_MARKED = """\
base: &base
  timeout: 2.5
  cpu: 1
limits:
  <<: *base
  memory_mb: 64
cases:
  - {name: a, args: [1, "2", 3.0, null, true], expect: {k: [x, y]}}
  - name: b
    stdin: |
      two
      lines
"""


def _paths(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every key path into `value`."""
    items = list(value.items()) if isinstance(value, dict) else list(enumerate(value)) \
        if isinstance(value, list) else []
    return [path, *(deeper for key, item in items for deeper in _paths(item, (*path, key)))]


@pytest.mark.skipif(marked_yaml._FAST is None, reason="PyYAML was built without libyaml here")
def test_libyaml_gives_the_same_data_lines_and_errors_as_the_pure_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = marked_yaml.load_marked(_MARKED, "p.yml")
    fast_errors = [_error(text) for text in ("a:\n\t- 1\n", "a: [1\n", "a: b: c\n", "x: 1\nx: 2\n")]
    monkeypatch.setattr(marked_yaml, "_FAST", None)
    pure = marked_yaml.load_marked(_MARKED, "p.yml")
    assert marked_yaml.unmark(fast) == marked_yaml.unmark(pure)
    paths = _paths(pure)
    assert len(paths) > 20
    assert [marked_yaml.line_of(fast, path) for path in paths] == [marked_yaml.line_of(pure, path) for path in paths]
    assert fast_errors == [_error(text) for text in ("a:\n\t- 1\n", "a: [1\n", "a: b: c\n", "x: 1\nx: 2\n")]


def _error(text: str) -> str:
    with pytest.raises(BadInput) as raised:
        marked_yaml.load_marked(text, "p.yml")
    return raised.value.render()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root remembers which documents are valid")
def test_a_valid_policy_is_remembered_by_its_content_and_any_edit_is_checked_again(state: Path) -> None:
    assert load_policy(None, text="budget: 3\n", source="a.yml").budget == 3
    assert load_policy(None, text="budget: 3\n", source="a.yml").budget == 3
    assert len(list(state.glob("valid-*.json"))) == 2  # the policy and the default preset it extends
    # The same keys with values of other types: JSON tells them apart, so they are validated (and refused).
    for text, got in (('budget: "3"\n', "the string '3'"), ("budget: true\n", "the boolean true")):
        with pytest.raises(BadInput, match=f"expected an integer, got {got}"):
            load_policy(None, text=text, source="a.yml")
    assert len(list(state.glob("valid-*.json"))) == 2  # nothing invalid is remembered


@pytest.mark.skipif(os.geteuid() != 0, reason="only root remembers which documents are valid")
@pytest.mark.parametrize("tamper", ["another uid's", "readable by others"])
def test_only_roots_own_record_says_a_policy_is_valid(state: Path, tamper: str) -> None:
    bad = 'budget: "3"\n'
    memo.remember("valid", _content(marked_yaml.load_marked(bad, "a.yml"), policy_schema()), True)
    [record] = state.glob("valid-*.json")
    believed: object = load_policy(None, text=bad, source="a.yml").budget
    assert believed == "3"  # root's own record is believed...
    if tamper == "another uid's":
        os.chown(record, 65534, 65534)
    else:
        record.chmod(0o644)
    with pytest.raises(BadInput, match="expected an integer"):  # ...and no other
        load_policy(None, text=bad, source="a.yml")


_SCALARS = """\
ints: [1, -2, 0x1f, 0o17, 1_000]
floats: [1.5, -0.25, 1e3, .inf, -.inf]
words: [yes, no, on, off, true, False, ~, null, "3", '4', plain text]
when: 2024-01-02
stamp: 2024-01-02T03:04:05Z
blob: !!binary aGVsbG8=
base: &base {a: 1, b: [x, y]}
merged:
  <<: *base
  c: z
again: *base
"""


def test_marked_yaml_reads_every_scalar_as_pyyaml_does() -> None:
    assert marked_yaml.unmark(marked_yaml.load_marked(_SCALARS, "p.yml")) == yaml.safe_load(_SCALARS)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root remembers which documents are valid")
def test_a_planted_state_directory_is_not_used_and_the_policy_still_loads(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / "state").symlink_to(victim)  # a link where root's own directory should be
    monkeypatch.setattr(memo, "STATE_DIR", str(tmp_path / "state"))
    assert load_policy(None, text="budget: 3\n", source="a.yml").budget == 3
    assert list(victim.iterdir()) == []  # nothing was written through the link


REPO_POLICY = """\
budget: 3
environment:
  requirements:
    - requirements/tests.txt
tests:
  paths: [tests, testing]
"""


@pytest.mark.parametrize(("files", "error"), [
    ({}, "{file}:4: environment.requirements[0]: no file requirements/tests.txt in the base commit"),
    ({"requirements/tests.txt": "\n"}, "{file}:6: tests.paths[1]: no file or folder testing in the base commit"),
], ids=["requirements", "test-path"])
def test_policy_check_checks_the_repository_as_gate_check_does_naming_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        files: dict[str, str], error: str) -> None:
    from tests.git_support import Repo

    repo = Repo(tmp_path / "repo")
    repo.commit("a project", {".github/gate.yml": REPO_POLICY, "calc.py": "def add(a, b):\n    return a + b\n",
                              "tests/test_calc.py": "def test_add():\n    pass\n", **files})
    base = repo.git("rev-parse", "HEAD")
    repo.commit("bot: a change", {"calc.py": "def add(a, b):\n    return b + a\n"})
    monkeypatch.chdir(repo.root)

    # In the repository, `gate policy check` checks the policy against it: the file, line and key.
    assert main(["policy", "check"]) == 2
    assert capsys.readouterr().err.strip() == "gate: error: " + error.format(file=".github/gate.yml")
    # `gate check` stops on the same line, by the same code, before it builds anything.
    assert main(["check", "--base", "main~1"]) == 2
    assert capsys.readouterr().err.strip() == "gate: error: " + error.format(file=f".github/gate.yml@{base[:12]}")
    # A named file elsewhere is only validated, as before; --repo checks it against that tree.
    assert main(["policy", "check", ".github/gate.yml"]) == 0
    assert main(["policy", "check", "--repo", "."]) == 2
