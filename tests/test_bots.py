"""Which pull requests the gate treats as bot-authored: the `bots:` grammar and the decision's rules."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from gate.bots.catalog import catalog
from gate.bots.decide import Author, CommitFacts, Person, decide
from gate.bots.patterns import login_matches, login_problem
from gate.globs import glob_problem
from gate.policy.model import Bots


def pull(login: str, author_type: str = "User", branch: str = "fix") -> Author:
    return Author(login, author_type, branch)


@pytest.mark.parametrize("login", ["scott", "robot", "abbot", "Margo"])
def test_default_pattern_does_not_catch_humans_whose_login_ends_in_b_o_or_t(login: str) -> None:
    assert not decide(pull(login), (), Bots()).gated


@pytest.mark.parametrize("login", ["my-app[bot]", "Some-App[BOT]"])
def test_default_pattern_catches_app_logins(login: str) -> None:
    # The account type alone would gate them; a pattern must work when GitHub reports a plain User.
    assert decide(pull(login, author_type="User"), (), Bots()).gated


def test_logins_are_case_insensitive_like_github() -> None:
    assert decide(pull("CodeBot-9000"), (), Bots(logins=("codebot-9000",), patterns=())).gated


def test_question_mark_matches_one_character() -> None:
    bots = Bots(patterns=("ai-agent-?",))
    assert decide(pull("ai-agent-7"), (), bots).gated
    assert not decide(pull("ai-agent-77"), (), bots).gated


def test_a_login_pattern_is_literal_but_for_star_and_question_mark() -> None:
    assert login_matches("renovate[bot]", "*[bot]") and not login_matches("renovateb", "*[bot]")
    assert login_problem("my-agent[bot") is not None  # not a login: refused when the policy loads
    assert login_problem("my-agent-*[bot]") is None


def test_branch_globs_follow_the_path_glob_rules() -> None:
    # A glob without `/` matches at any depth, as docs/github.md's branch globs say; `x/**` is every branch under x/.
    bots = Bots(branches=("bot-*",), agents=())
    assert decide(pull("alice", branch="team/bot-1"), (), bots).gated
    assert decide(pull("alice", branch="bot-1"), (), bots).gated
    assert not decide(pull("alice", branch="robot-1"), (), bots).gated
    assert glob_problem("src/[abc") is not None


def test_an_opt_out_label_on_a_bot_pr_is_an_opt_out_the_report_says_would_be_gated() -> None:
    decision = decide(pull("my-app[bot]", "Bot"), ("no-gate",), Bots())
    assert not decision.gated and decision.opted_out and "would be gated" in decision.reason


def test_dependency_bots_are_gated_only_when_the_policy_says_so() -> None:
    for login in catalog().dependency_bots:
        assert not decide(pull(login, "Bot"), (), Bots()).gated
        assert decide(pull(login, "Bot"), (), Bots(dependency_bots=True)).gated
        assert decide(pull(login, "Bot"), (), Bots(logins=(login,))).gated


def test_trailers_match_by_key_and_email_in_the_trailer_block_only() -> None:
    human = Person("Ann", "ann@example.com", "ann")
    trailer = "Co-Authored-By: Claude <NoReply@Anthropic.com>"
    in_body = CommitFacts("3f2a1c9" + "0" * 33, f"Fix\n\n{trailer}\n", human, human)
    in_subject = CommitFacts("4f2a1c9" + "0" * 33, f"Fix: say {trailer}", human, human)
    decision = decide(pull("ann"), (), Bots(), (in_body,))
    assert decision.gated and decision.reason == f"commit 3f2a1c9 has the trailer {trailer} (Claude Code)"
    assert not decide(pull("ann"), (), Bots(), (in_subject,)).gated


def test_the_agents_key_turns_agents_off() -> None:
    assert decide(pull("ann", branch="codex/fix"), (), Bots()).gated
    assert not decide(pull("ann", branch="codex/fix"), (), Bots(agents=("copilot",))).gated


def test_every_shipped_agent_says_where_its_marks_come_from_and_validates() -> None:
    for agent in catalog().agents:
        assert agent.source and agent.name
        assert agent.logins or agent.branches or agent.trailers or agent.identities
        assert all(login_problem(login) is None for login in agent.logins)
        assert all(glob_problem(glob) is None for glob in agent.branches)


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML was built without libyaml here")
def test_the_shipped_catalog_reads_the_same_with_libyaml_and_the_pure_loader() -> None:
    text = (resources.files("gate") / "bots" / "agents.yml").read_text(encoding="utf-8")
    assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.load(text, Loader=yaml.SafeLoader)
