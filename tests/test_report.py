"""The Markdown report as GitHub renders it (cmarkgfm is GitHub's own cmark fork), and the annotations."""

from __future__ import annotations

import re

import cmarkgfm
from cmarkgfm.cmark import Options
from msgspec.structs import replace

from gate.engine import run_checks
from gate.policy.model import Policy
from gate.report.annotations import escape_data, escape_property, workflow_commands
from gate.report.comment import COMMENT_LIMIT, render_comment
from gate.report.context import MARKER
from gate.report.markdown import cut
from gate.report.summary import render_summary
from gate.report.templating import Overrides
from gate.report.terminal import render_terminal
from gate.subject import SourceFile, Subject
from gate.verdict import CaseReport, CheckReport, Location, Note, Penalty
from tests.report_support import HEAD, REPO, blocked_verdict


def html(markdown: str) -> str:
    """GitHub's rendering. UNSAFE keeps raw HTML (as GitHub does, before its sanitizer), so that anything our
    escaping let through would show up here."""
    rendered: str = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    return rendered



def test_first_line_says_blocked_and_total_against_budget() -> None:
    comment = render_comment(blocked_verdict())
    first = comment.splitlines()[0]
    assert "blocked" in first and "7 points against a budget of 3" in first
    accepted = render_comment(blocked_verdict(total=0, accepted=True, penalties=()))
    first = accepted.splitlines()[0]
    assert "accepted" in first and "0 points against a budget of 3" in first


def test_penalty_table_renders_as_a_table_with_one_row_per_penalty_and_a_total() -> None:
    page = html(render_comment(blocked_verdict()))
    table = page.split("<table>")[1].split("</table>")[0]
    assert "<th>check</th>" in table and "<th>what went wrong</th>" in table
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    assert len(rows) == 1 + 3 + 1  # header, three penalties, total
    assert "<strong>7</strong>" in rows[-1] and "budget 3" in rows[-1]


def test_import_location_links_to_the_line_at_the_head_commit() -> None:
    page = html(render_comment(blocked_verdict()))
    assert f'<a href="{REPO}/blob/{HEAD}/src/util.py#L12">src/util.py:12</a>' in page


def test_without_a_repository_url_locations_are_plain_path_and_line() -> None:
    page = html(render_comment(blocked_verdict(facts=(("head", HEAD),))))
    assert "<code>src/util.py:12</code>" in page and "octo/widgets" not in page


def test_failed_cases_fold_into_details_with_their_diff_and_hidden_ones_are_marked() -> None:
    page = html(render_comment(blocked_verdict()))
    details = re.findall(r"<details>(.*?)</details>", page, re.S)
    cases = next(d for d in details if "Failed cases" in d)
    assert "<summary>Failed cases: 2 of 3</summary>" in cases
    assert "<pre><code>- expected: 4\n+ got:      5\n</code></pre>" in cases
    assert "<strong>hidden case 1</strong>" in cases and "returned int" in cases
    assert "prints" not in cases  # passed cases are not listed


def test_skipped_checks_isolation_and_footer_are_shown() -> None:
    page = html(render_comment(blocked_verdict()))
    # A skipped check's reason is its row's, said once.
    assert "<td>claims</td>\n<td>skipped</td>\n<td align=\"right\">0</td>\n<td>no claims to judge</td>" in page
    assert page.count("no claims to judge") == 1
    assert "<td>network</td>\n<td>off: needs root</td>" in page
    assert f"Reproduce locally: <code>gate check --base {'a' * 40} --head {HEAD}</code>" in page
    assert page.count(".github/gate.yml@aaaaaaa") == 1  # the policy, once: in the footer
    assert "under the policy <code>.github/gate.yml@aaaaaaa</code> by gate 0.1.0" in page


def test_blocked_reasons_are_listed_even_within_budget() -> None:
    reason = "the change edits the policy file .github/gate.yml, which is read from the base commit"
    comment = render_comment(blocked_verdict(total=0, penalties=(), blocked_reasons=(reason,)))
    assert "blocked" in comment.splitlines()[0] and "needs a human" in comment.splitlines()[0]
    assert f"<li>{reason}</li>" in html(comment)


def test_marker_is_hidden_and_last() -> None:
    comment = render_comment(blocked_verdict())
    assert comment.rstrip("\n").endswith(MARKER)
    page = html(comment)
    assert MARKER in page  # an HTML comment: in the page, invisible
    assert "gate:report" not in re.sub(r"<!--.*?-->", "", page)


def test_hostile_text_cannot_break_the_table_inject_html_or_mention() -> None:
    hostile = ("x | y </td><script>alert(1)</script> <details> @octocat [click](https://evil.example) `a|b`"
               "\n| z |")
    verdict = blocked_verdict(
        penalties=(Penalty("imports", 3, hostile, (Location("<img src=x onerror=1>|@admin.py", 1),)),),
        cases=(CaseReport(0, "@team </details> **bold**", "call", False, "failed", "```\n</details>\n@x"),),
    )
    page = html(render_comment(verdict))
    assert "<script>" not in page and "<img" not in page and "evil.example\"" not in page
    table = page.split("<table>")[1].split("</table>")[0]
    assert len(re.findall(r"<tr>", table)) == 3  # header, the one penalty, total: the pipes did not split it
    assert all(len(re.findall(r"<td", row)) == 3 for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:])
    assert "&lt;script&gt;" in page
    # Mentions are broken by a zero-width space, so GitHub notifies no one (it never looks inside code).
    prose = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", page, flags=re.S)
    assert not re.search(r"@(octocat|admin|team)\b", prose) and "@\u200boctocat" in prose
    # The case name's </details> did not close the section early; the diff stayed inside its code block.
    cases = page.split("<summary>Failed cases")[1]
    assert cases.index("<pre><code>") < cases.index("&lt;/details&gt;\n@x") < cases.index("</code></pre>")
    assert page.count("<details>") == page.count("</details>")


def test_control_and_bidi_characters_are_shown_not_obeyed() -> None:
    verdict = blocked_verdict(
        penalties=(Penalty("parse", 5, "bad\x1b[31m", (Location("evil\u202eyp.txt", 1),)),),
        cases=(CaseReport(0, "c", "stdio", False, "failed", "got \x1b[2J\u2066x"),), facts=())
    page = html(render_comment(verdict))
    assert "\u202e" not in page and "\x1b" not in page and "\u2066" not in page
    assert "<code>evilU+202Eyp.txt:1</code>" in page and "badU+001B[31m" in page
    assert "got U+001B[2JU+2066x" in page


def test_over_the_limit_the_comment_is_cut_outside_any_table_or_details_with_a_note() -> None:
    many = tuple(CaseReport(i, f"case {i}", "call", False, "failed", "expected 1\n" + "got 2 " * 200)
                 for i in range(200))
    verdict = blocked_verdict(cases=many)
    full = render_summary(verdict)
    assert len(full) > COMMENT_LIMIT and "case 199" in full
    comment = render_comment(verdict)
    assert len(comment) <= COMMENT_LIMIT
    page = html(comment)
    assert "This comment was cut to fit GitHub's limit of 65,536 characters" in page
    assert "job summary" in page
    assert page.count("<details>") == page.count("</details>")
    assert comment.rstrip("\n").endswith(MARKER)
    assert "case 199" not in comment


def test_cut_never_stops_inside_a_table_row_details_or_fence() -> None:
    block = ("head\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n"
             "<details><summary>s</summary>\n\n```\nx\n```\n\n</details>\n")
    text = block * 50
    for limit in range(200, 2000, 37):
        out = cut(text, limit, "NOTE")
        assert len(out) <= limit and out.endswith("NOTE")
        kept = out[: -len("NOTE")]
        assert kept.count("<details>") == kept.count("</details>") and kept.count("```") % 2 == 0
        assert all(line.endswith("|") for line in kept.splitlines() if line.startswith("|"))
        page = html(out)
        assert page.count("<details>") == page.count("</details>") and page.rstrip().endswith("<p>NOTE</p>")
        assert page.count("<thead>") == page.count("<tbody>")  # no table is left with a header alone


def test_job_summary_is_the_full_report_without_the_marker() -> None:
    summary = render_summary(blocked_verdict())
    assert MARKER not in summary and "blocked" in summary.splitlines()[0]
    assert "<table>" in html(summary)


def test_repository_template_override_is_used_and_a_broken_one_falls_back_with_a_note() -> None:
    template = "{{ status }}: {{ verdict.total }}/{{ verdict.budget }} {{ headline }}\n"
    good = Overrides({"comment.md.j2": template}, origin=".github/gate/templates@abc")
    assert render_comment(blocked_verdict(), good).startswith("blocked: 7/3 7 points against a budget of 3")
    broken = Overrides({"comment.md.j2": "{% for x in %}"}, origin=".github/gate/templates@abc")
    comment = render_comment(blocked_verdict(), broken)
    assert "blocked" in comment.splitlines()[0]
    note = ("the repository's template .github/gate/templates@abc/comment.md.j2 failed "
            "(TemplateSyntaxError line 1")
    assert note in html(comment).replace("\u200b", "")
    failing = Overrides({"summary.md.j2": "{{ verdict.total + 'x' }}"})
    assert "the built-in template was used" in html(render_summary(blocked_verdict(), failing))


def test_override_cannot_reach_python_internals() -> None:
    escape = Overrides({"comment.md.j2": "{{ verdict.__class__.__init__.__globals__ }}"})
    comment = render_comment(blocked_verdict(), escape)
    assert "__builtins__" not in comment and "built-in template was used" in html(comment)


def test_annotations_one_per_location_with_github_escaping() -> None:
    verdict = blocked_verdict(penalties=(
        Penalty("imports", 3, "100% bad\r\nnext: line, ok", (Location("a,b:c.py", 3, 4), Location("d.py"))),
        Penalty("smoke", 2, "case 0 failed"),
    ))
    lines = workflow_commands(verdict)
    assert lines == [
        "::error file=a%2Cb%3Ac.py,line=3,col=4,title=gate imports%3A +3 points"
        "::100%25 bad%0D%0Anext: line, ok",
        "::error file=d.py,title=gate imports%3A +3 points::100%25 bad%0D%0Anext: line, ok",
        "::error title=gate smoke%3A +2 points::case 0 failed",
    ]
    advisory = workflow_commands(replace(verdict, mode="advisory"))
    assert all(line.startswith("::warning ") for line in advisory)


def test_workflow_command_escaping() -> None:
    assert escape_data("a%b\rc\nd:e,f") == "a%25b%0Dc%0Ad:e,f"
    assert escape_property("a%b\rc\nd:e,f") == "a%25b%0Dc%0Ad%3Ae%2Cf"


def test_notes_are_listed_with_their_locations() -> None:
    verdict = blocked_verdict(notes=(Note("judge", "looks fine", (Location("src/util.py", 3),)),))
    assert f'<li>judge: looks fine at <a href="{REPO}/blob/{HEAD}/src/util.py#L3">src/util.py:3</a></li>' \
        in html(render_comment(verdict))


def test_a_summary_beyond_githubs_1_mib_is_cut_with_a_note() -> None:
    many = tuple(CaseReport(i, f"case {i}", "call", False, "failed", "x" * 2000) for i in range(700))
    summary = render_summary(blocked_verdict(cases=many))
    assert len(summary.encode("utf-8")) <= 1024 * 1024
    assert "This summary was cut to fit GitHub's 1 MiB limit" in summary
    assert html(summary).count("<details>") == html(summary).count("</details>")


def test_advisory_mode_accepts_but_says_it_is_over_budget() -> None:
    first = render_comment(blocked_verdict(mode="advisory", accepted=True)).splitlines()[0]
    assert "accepted" in first and "7 points against a budget of 3" in first and "advisory" in first


def test_a_huge_range_still_gets_its_penalty_table_in_the_comment() -> None:
    files = tuple(SourceFile(f"pkg/module_with_a_long_name_{i}.py", "import os\ndef f(:\n") for i in range(1500))
    verdict = run_checks(Subject(kind="range", label="a..b", files=files, facts=(("repo", REPO), ("head", HEAD))),
                    Policy())
    comment = render_comment(verdict)
    assert len(comment) < COMMENT_LIMIT // 4
    page = html(comment)
    assert "<td>parse</td>" in page and "1500 files do not parse" in page and "and 1490 more" in page
    assert page.count('href="https://github.com/octo/widgets/blob/') == 10
    terminal = render_terminal(verdict, color=False)
    assert len(terminal.splitlines()) < 60 and "and 1490 more" in terminal


def test_each_place_is_shown_once_as_a_link_where_the_message_names_it() -> None:
    imports = Penalty("imports", 3, "import os (src/util.py:1): os is denied; import re (src/util.py:17)",
                      (Location("src/util.py", 1, 0), Location("src/util.py", 17, 0)))
    elsewhere = Penalty("parse", 5, "does not parse", (Location("src/app.py", 4, 2),))
    page = html(render_comment(blocked_verdict(penalties=(imports, elsewhere))))
    row = next(r for r in re.findall(r"<tr>(.*?)</tr>", page, re.S) if "<td>imports</td>" in r)
    assert row.count("src/util.py:1<") == 1 and row.count("src/util.py:17<") == 1  # 1 is not 17's start
    assert f'(<a href="{REPO}/blob/{HEAD}/src/util.py#L1">src/util.py:1</a>)' in row and " at " not in row
    assert f'does not parse at <a href="{REPO}/blob/{HEAD}/src/app.py#L4">src/app.py:4</a>' in page


def test_the_comment_names_the_head_says_what_now_and_drops_what_it_would_repeat() -> None:
    hidden = "hidden case 1 failed: a wrong value (returned int; ...)"
    verdict = blocked_verdict(penalties=(Penalty("smoke", 2, "case 0 add_two failed: - expected: 4", (), case=0),
                                         Penalty("smoke", 2, hidden, (), case=1)),
                              cases=(CaseReport(0, "add_two", "call", False, "failed", "- expected: 4\n+ got: 5"),
                                     CaseReport(1, "hidden case 1", "call", True, "failed", "returned int")),
                              checks=(CheckReport("extract", "passed"), CheckReport("smoke", "failed", 4)),
                              facts=(("repo", REPO), ("head", HEAD), ("pull request", "7")))
    comment = render_comment(verdict)
    page = html(comment)
    assert comment.splitlines()[0].startswith(f"❌ **gate: blocked** at [`{HEAD[:12]}`]({REPO}/commit/{HEAD})")
    assert "push a fix" in page and f"<code>/gate override {HEAD[:12]} &lt;reason&gt;</code>" in page
    assert f'<a href="{REPO}/pull/7/checks">' in page
    cases = next(d for d in re.findall(r"<details>(.*?)</details>", page, re.S) if "Failed cases" in d)
    assert "add_two" in cases and "hidden case 1" not in cases  # a diff says more; "returned int" does not
    assert "<th>reason</th>" not in page.split("Checks, isolation")[1]  # no check has a reason: no column
    accepted = render_comment(blocked_verdict(total=0, accepted=True, penalties=()))
    assert "What now" not in accepted


def test_the_comment_folds_isolation_to_the_layers_off_or_weaker_and_the_summary_lists_all() -> None:
    layers = (("network", "off: needs root"), ("setsid", "on"), ("zygote", "off: not preferred (prefer_zygote=False)"),
              ("pytest", "in-process, weaker isolation: ..."))
    verdict = blocked_verdict(isolation=layers)
    comment, summary = html(render_comment(verdict)), html(render_summary(verdict))
    assert "<td>network</td>" in comment and "<td>pytest</td>" in comment
    assert "<td>setsid</td>" not in comment and "<td>zygote</td>" not in comment
    assert "The other isolation layers were at full strength: setsid, zygote" in comment
    assert all(f"<td>{name}</td>" in summary for name, _ in layers)


def test_when_no_code_ran_no_isolation_layer_is_listed_as_off() -> None:
    # A static-only policy (no case, no test): the comment and the summary say no code ran, and list no layer.
    verdict = run_checks(Subject(kind="range", label="a..b", files=(SourceFile("util.py", "x = 1\n"),),
                                 facts=(("repo", REPO), ("head", HEAD))), Policy())
    assert dict(verdict.isolation) == {"code execution": "off: not run"}
    for page in (html(render_comment(verdict)), html(render_summary(verdict))):
        assert "No code of the change ran (no case or test to run), so no isolation layer was needed." in page
        assert "code execution" not in page and "isolation layer</th>" not in page
    assert "no code ran" in render_terminal(verdict, color=False)
