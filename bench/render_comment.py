"""The PR comment as a reviewer sees it: a real `gate check` on a bot's change, rendered as GitHub renders
Markdown (cmarkgfm, GitHub's cmark fork, with its extensions) and photographed by headless Chromium.

    .venv/bin/python bench/render_comment.py [--out docs/images/comment.png] [--markdown FILE] [--html FILE]
                                             [--height PIXELS]

The bot's change (in a fresh repository whose origin is on github.com, so locations are links) "speeds up" a
function the repository's own tests cover: one test fails, through the line the bot changed, which the comment
names and links beside the test's own line. Needs `git` and Chromium (`apt-get install chromium
fonts-noto-color-emoji`: without the font the status mark is an empty box); prints the Markdown's path and the
screenshot's.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

POLICY = """\
budget: 3
environment: null
tests:
  paths: [tests]
"""
BASE = """\
def want_bytes(s, encoding="utf-8", errors="strict"):
    if isinstance(s, str):
        s = s.encode(encoding, errors)
    return s


def slug(title):
    return "-".join(title.lower().split())
"""
HEAD = BASE.replace("s = s.encode(encoding, errors)", 's = s.encode("ascii", errors)  # faster')
TESTS = """\
import pytest

from textutil import slug, want_bytes


@pytest.mark.parametrize("value", ["ma\u00f1ana", b"tomorrow"])
def test_want_bytes(value):
    out = want_bytes(value)
    assert isinstance(out, bytes)


def test_slug():
    assert slug("Hello World") == "hello-world"
"""
# GitHub's comment box, near enough: its font stack, table and code styles, a 760 px column.
STYLE = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328;
       margin: 0; padding: 16px; background: #fff; }
main { max-width: 760px; border: 1px solid #d1d9e0; border-radius: 6px; padding: 16px 24px; }
table { border-collapse: collapse; margin: 8px 0 16px; display: block; overflow: auto; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
tr:nth-child(2n) { background: #f6f8fa; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #eff1f3; padding: .2em .4em;
       border-radius: 6px; }
pre { background: #f6f8fa; padding: 12px; border-radius: 6px; overflow: auto; }
pre code { background: none; padding: 0; }
a { color: #0969da; text-decoration: none; } summary { cursor: pointer; }
hr { border: 0; border-top: 1px solid #d1d9e0; }
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args], cwd=repo,
                   check=True, capture_output=True)


def comment(workdir: Path) -> str:
    """The comment `gate check` writes for the bot's change."""
    repo = workdir / "repo"
    (repo / ".github").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", "https://github.com/octo/widgets.git")
    (repo / ".github" / "gate.yml").write_text(POLICY)
    (repo / "textutil.py").write_text(BASE)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_textutil.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "bot")
    (repo / "textutil.py").write_text(HEAD)
    git(repo, "commit", "-qam", "bot: a faster want_bytes")
    out = workdir / "comment.md"
    subprocess.run([sys.executable, "-P", "-m", "gate", "check", "--quiet", "--repo", str(repo), "--comment",
                    str(out)], check=False, capture_output=True, cwd="/")
    return out.read_text(encoding="utf-8")


def html(markdown: str) -> str:
    """GitHub's rendering of a comment: GFM with its extensions; raw HTML (the `<details>` folds) kept."""
    body = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    # GitHub opens no fold by itself; open them here so that the screenshot shows what a click shows.
    body = body.replace("<details>", "<details open>")
    return f"<!doctype html><meta charset=utf-8><style>{STYLE}</style><main>{body}</main>"


def screenshot(page: Path, out: Path, height: int) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("no Chromium on PATH: apt-get install chromium")
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size=820,{height}", f"--screenshot={out}", page.as_uri()],
                   check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("docs/images/comment.png"), help="the screenshot (PNG)")
    parser.add_argument("--markdown", type=Path, help="also keep the comment's Markdown here")
    parser.add_argument("--html", type=Path, help="also keep the rendered page here")
    parser.add_argument("--height", type=int, default=900, help="the window's height in pixels (default 900)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        markdown = comment(work)
        page = args.html or work / "comment.html"
        page.write_text(html(markdown), encoding="utf-8")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        screenshot(page.resolve(), args.out.resolve(), args.height)
    if args.markdown:
        args.markdown.write_text(markdown, encoding="utf-8")
    print(f"{args.markdown or '(markdown not kept)'}\n{args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
