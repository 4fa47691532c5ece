"""Which pull requests the gate treats as bot-authored, under the policy's `bots:` block."""

from __future__ import annotations

import pytest

from gate.policy.model import Bots
from gate.sources.pullrequest import PullRequest, decide


def pull(author: str, author_type: str = "User", labels: tuple[str, ...] = (), branch: str = "fix") -> PullRequest:
    return PullRequest(repo="o/r", number=1, head_sha="a" * 40, base_sha="b" * 40, head_ref=branch,
                       author=author, author_type=author_type, labels=labels, fork=False)


@pytest.mark.parametrize("login", ["scott", "robot", "abbot", "Margo"])
def test_default_pattern_does_not_catch_humans_whose_login_ends_in_b_o_or_t(login: str) -> None:
    assert not decide(pull(login), Bots()).gated


@pytest.mark.parametrize("login", ["renovate[bot]", "my-app[bot]", "Some-App[BOT]"])
def test_default_pattern_catches_app_logins(login: str) -> None:
    # The account type alone would gate them; a pattern must work when GitHub reports a plain User.
    assert decide(pull(login, author_type="User"), Bots()).gated


def test_logins_are_case_insensitive_like_github() -> None:
    assert decide(pull("CodeBot-9000"), Bots(logins=("codebot-9000",), patterns=())).gated


def test_question_mark_matches_one_character() -> None:
    bots = Bots(patterns=("ai-agent-?",))
    assert decide(pull("ai-agent-7"), bots).gated
    assert not decide(pull("ai-agent-77"), bots).gated


def test_opt_out_label_wins_over_a_bot_author() -> None:
    decision = decide(pull("renovate[bot]", "Bot", labels=("no-gate",)), Bots())
    assert not decision.gated and "no-gate" in decision.reason
