"""The hot calls' JSON answers read into perfbot's types (perfbot.github.answers)."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from githubkit import Response

from perfbot.github import answers
from perfbot.github.convert import NOT_A_FILE
from perfbot.github.errors import GitHubError


def answer(data: Any) -> Response[Any, Any]:
    raw = httpx.Response(200, content=json.dumps(data).encode())
    return Response(raw, Any)


def pull_json(**changes: Any) -> dict[str, Any]:
    pull: dict[str, Any] = {
        "number": 7,
        "state": "open",
        "title": "Faster",
        "comments": 2,
        "labels": [{"name": "perf"}, {"name": ""}],
        "head": {"sha": "a" * 40, "ref": "topic", "repo": {"id": 11}},
        "base": {"sha": "b" * 40, "ref": "main", "repo": {"id": 10}},
    }
    return {**pull, **changes}


def test_a_pull_keeps_what_perfbot_reads() -> None:
    pull = answers.pull(answer(pull_json()), "PR 7")
    assert (pull.number, pull.head_sha, pull.head_repo_id, pull.base_repo_id) == (
        7,
        "a" * 40,
        11,
        10,
    )
    assert pull.labels == ("perf",)
    assert pull.comments == 2


def test_a_pull_whose_fork_is_gone_has_no_head_repository() -> None:
    data = pull_json(head={"sha": "a" * 40, "ref": "topic", "repo": None})
    assert answers.pull(answer(data), "PR 7").head_repo_id is None


@pytest.mark.parametrize("broken", [{"number": "7"}, {"head": None}, {"comments": True}])
def test_a_field_missing_or_mistyped_is_a_github_error_naming_it(broken: dict[str, Any]) -> None:
    with pytest.raises(GitHubError, match=r"^GitHub's answer to PR 7 lacks a valid '\w+'$"):
        answers.pull(answer(pull_json(**broken)), "PR 7")


def test_an_answer_that_is_not_json_is_a_github_error() -> None:
    raw = Response(httpx.Response(200, content=b"<html>"), Any)
    with pytest.raises(GitHubError, match="is not JSON"):
        answers.comment(raw, "a comment")


def test_artifacts_time_and_run_as_githubkit_models_gave_them() -> None:
    data = {
        "total_count": 1,
        "artifacts": [
            {
                "id": 5,
                "name": "perfbot",
                "size_in_bytes": 100,
                "expired": False,
                "digest": None,
                "created_at": "2024-05-01T10:00:00Z",
                "workflow_run": {"id": 99},
            }
        ],
    }
    (artifact,) = answers.artifacts(answer(data), "run 99")
    assert artifact.created_at == "2024-05-01T10:00:00+00:00"
    assert (artifact.run_id, artifact.digest) == (99, None)


def test_a_comment_by_the_app_names_it_and_a_persons_does_not() -> None:
    by_app = {"id": 1, "body": "x", "user": {"login": "bot"}, "performed_via_github_app": {"id": 3}}
    by_person = {**by_app, "performed_via_github_app": None, "body": None}
    assert answers.comment(answer(by_app), "c").app_id == 3
    person = answers.comment(answer(by_person), "c")
    assert (person.app_id, person.body, person.user_login) == (None, "", "bot")


def test_file_contents_decode_and_anything_else_is_not_a_file() -> None:
    text = base64.b64encode(b"noise: 0.05\n").decode()
    assert answers.file_text(answer({"type": "file", "content": text})) == "noise: 0.05\n"
    assert answers.file_text(answer([{"type": "file"}])) == NOT_A_FILE
    assert answers.file_text(answer({"type": "symlink", "target": "x"})) == NOT_A_FILE
    latin = base64.b64encode("é".encode("latin-1")).decode()
    assert answers.file_text(answer({"type": "file", "content": latin})) == "\x00"


def test_a_commits_pulls_are_read_in_their_simple_form() -> None:
    simple = {key: value for key, value in pull_json().items() if key != "comments"}
    (pull,) = answers.pulls(answer([simple]), "the pulls of commit abc")
    assert (pull.number, pull.base_ref, pull.comments) == (7, "main", None)


def test_a_page_of_comments_keeps_who_wrote_each() -> None:
    page = [
        {"id": 1, "body": "hi", "user": {"login": "bob"}, "performed_via_github_app": None},
        {"id": 2, "body": None, "user": None, "performed_via_github_app": {"id": 4242}},
    ]
    first, second = answers.comments(answer(page), "the comments of #7")
    assert (first.id, first.body, first.user_login, first.app_id) == (1, "hi", "bob", None)
    assert (second.body, second.user_login, second.app_id) == ("", "", 4242)


def test_a_list_answer_that_is_no_array_or_lacks_an_id_is_a_github_error() -> None:
    with pytest.raises(GitHubError, match="is not a JSON array"):
        answers.comments(answer({"id": 1}), "the comments of #7")
    with pytest.raises(GitHubError, match=r"lacks a valid 'id'"):
        answers.comments(answer([{"body": "no id"}]), "the comments of #7")
