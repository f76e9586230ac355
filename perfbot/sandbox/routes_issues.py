"""Issues, issue comments and their reactions. Each handler reads like the GitHub docs of its
endpoint; errors are raised."""

from __future__ import annotations

from typing import Any, Final

from starlette.responses import Response

from perfbot.sandbox.common import COMMENT_BODY_LIMIT, REACTIONS, Json
from perfbot.sandbox.issue_json import comment_json, issue_json, reaction_json
from perfbot.sandbox.models import Comment, Reaction
from perfbot.sandbox.plumbing import Call, HttpError, body_dict, invalid, json_response, paginate

STATE_REASONS: Final = ("completed", "not_planned", "duplicate", "reopened")


def writer(call: Call) -> tuple[str, int | None]:
    """Who writes with the request's token: the App's bot, or github-actions[bot]."""
    author = call.token.author if call.token else None
    return author or (call.fake.bot_login, call.fake.app_id)


def issue_title(body: Json) -> str:
    title = body.get("title")
    if isinstance(title, bool) or not isinstance(title, str | int) or not str(title).strip():
        raise invalid("Issue", "title", "title wasn't supplied")
    return str(title)


def issue_text(body: Json) -> str | None:
    text = body.get("body")
    if text is not None and not isinstance(text, str):
        raise invalid("Issue", "body", "body is not a string")
    if text is not None and len(text) > COMMENT_BODY_LIMIT:
        raise invalid(
            "Issue", "body", f"body is too long (maximum is {COMMENT_BODY_LIMIT} characters)"
        )
    return text


def issue_labels(value: Any) -> list[str]:
    """Label names from strings or label objects, as GitHub takes them."""
    if not isinstance(value, list):
        raise invalid("Issue", "labels", "labels must be an array")
    names: list[str] = []
    for item in value:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name:
            raise invalid("Label", "name", f"{item!r} is not a label")
        if name not in names:
            names.append(name)
    return names


def create_issue(call: Call) -> Response:
    fake, repo, body = call.fake, call.repo, body_dict(call)
    if not repo.has_issues:
        raise HttpError(410, "Issues are disabled for this repo")
    title, text = issue_title(body), issue_text(body)
    labels = issue_labels(body.get("labels", []))
    login, app_id = writer(call)
    issue = fake.add_issue(repo, None, title, text, labels=labels, login=login, app_id=app_id)
    content = issue_json(fake, repo, issue.number)
    return json_response(content, 201, headers={"location": content["url"]})


def get_issue(call: Call) -> Response:
    return json_response(issue_json(call.fake, call.repo, issue_number(call)))


def update_issue(call: Call) -> Response:
    """``PATCH …/issues/{number}``: title, body, labels, and state with its reason (closing
    says ``completed`` unless told otherwise, reopening says ``reopened``)."""
    fake, repo, body = call.fake, call.repo, body_dict(call)
    number = issue_number(call)
    state = body.get("state")
    if state is not None and state not in ("open", "closed"):
        raise invalid("Issue", "state", f"state {state!r} is not open or closed")
    reason = body.get("state_reason")
    if reason is not None and reason not in STATE_REASONS:
        raise invalid("Issue", "state_reason", f"state_reason {reason!r} is not valid")
    pull = repo.pulls.get(number)
    if pull is not None:
        if "title" in body:
            pull.title = issue_title(body)
        if "labels" in body:
            pull.labels = issue_labels(body["labels"])
        if state is not None:
            pull.state = state
        return json_response(issue_json(fake, repo, number))
    issue = repo.issues[number]
    if "title" in body:
        issue.title = issue_title(body)
    if "body" in body:
        issue.body = issue_text(body)
    if "labels" in body:
        issue.labels = issue_labels(body["labels"])
    now = fake.now()
    if state == "closed" and issue.state == "open":
        issue.state, issue.closed_at, issue.closed_by = "closed", now, writer(call)[0]
        issue.state_reason = reason or "completed"
    elif state == "open" and issue.state == "closed":
        issue.state, issue.closed_at, issue.closed_by = "open", None, None
        issue.state_reason = "reopened"
    issue.updated_at = now
    return json_response(issue_json(fake, repo, number))


def list_issues(call: Call) -> Response:
    """``GET …/issues``: issues and pull requests (as GitHub lists them), by state,
    labels (all of them), creator, assignee and milestone (the fake has neither), since."""
    fake, repo, query = call.fake, call.repo, call.query
    state = query.get("state", "open")
    if state not in ("open", "closed", "all"):
        raise HttpError(422, f"Invalid value for 'state': {state!r}")
    numbers = sorted({*repo.pulls, *repo.issues})
    items = [issue_json(fake, repo, n) for n in numbers]
    if state != "all":
        items = [i for i in items if i["state"] == state]
    wanted = [name.strip() for name in query.get("labels", "").split(",") if name.strip()]
    items = [i for i in items if set(wanted) <= {label["name"] for label in i["labels"]}]
    if "creator" in query:
        items = [i for i in items if i["user"]["login"].lower() == query["creator"].lower()]
    if query.get("assignee", "none") != "none" or query.get("milestone", "none") not in (
        "none",
        "*",
    ):
        items = []  # nothing in the fake has an assignee or a milestone
    if "since" in query:
        since = query["since"]
        items = [i for i in items if i["updated_at"] >= since]
    key = {"created": "created_at", "updated": "updated_at", "comments": "comments"}.get(
        query.get("sort", "created")
    )
    if key is None:
        raise HttpError(422, f"Invalid value for 'sort': {query['sort']!r}")
    items.sort(key=lambda i: (i[key], i["number"]), reverse=query.get("direction") != "asc")
    page, headers = paginate(call, items)
    return json_response(page, headers=headers)


def issue_number(call: Call) -> int:
    number = call.int_param("number")
    if number not in call.repo.pulls and number not in call.repo.issues:
        raise HttpError(404, "Not Found")
    return number


def comment_of(call: Call) -> Comment:
    comment = call.fake.comments.get(call.int_param("comment_id"))
    if comment is None or comment.deleted or comment.repo != call.repo.full_name:
        raise HttpError(404, "Not Found")
    return comment


def comment_body(call: Call) -> str:
    body = body_dict(call).get("body")
    if not isinstance(body, str):
        raise HttpError(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
    if len(body) > COMMENT_BODY_LIMIT:
        raise invalid(
            "IssueComment", "data", f"Body is too long (maximum is {COMMENT_BODY_LIMIT} characters)"
        )
    return body


def list_comments(call: Call) -> Response:
    comments = call.fake.comments_on(call.repo, issue_number(call))
    page, headers = paginate(call, comments)
    return json_response([comment_json(call.fake, c) for c in page], headers=headers)


def create_comment(call: Call) -> Response:
    fake = call.fake
    number = issue_number(call)
    login, app_id = (call.token.author if call.token else None) or (fake.bot_login, fake.app_id)
    comment = fake.add_comment(call.repo, number, comment_body(call), login, "Bot", app_id)
    content = comment_json(fake, comment)
    return json_response(content, 201, headers={"location": content["url"]})


def get_comment(call: Call) -> Response:
    return json_response(comment_json(call.fake, comment_of(call)))


def update_comment(call: Call) -> Response:
    comment = comment_of(call)
    body = comment_body(call)
    writer = (call.token.author if call.token else None) or (None, call.fake.app_id)
    if comment.app_id != writer[1]:
        # GitHub allows it with write access; perfbot must never do it, so tests check this list.
        call.fake.foreign_comment_edits.append(comment.id)
    comment.previous_body, comment.body = comment.body, body
    comment.edits += 1
    comment.updated_at = call.fake.now()
    return json_response(comment_json(call.fake, comment))


def create_reaction(call: Call) -> Response:
    fake = call.fake
    comment = comment_of(call)
    content = body_dict(call).get("content")
    if content not in REACTIONS:
        raise invalid("Reaction", "content", f"content {content!r} is not a valid reaction")
    for existing in comment.reactions:
        if existing.content == content and existing.user == fake.bot_login:
            return json_response(reaction_json(fake, existing), 200)
    reaction = Reaction(
        id=fake.next_id(), content=str(content), user=fake.bot_login, created_at=fake.now()
    )
    comment.reactions.append(reaction)
    return json_response(reaction_json(fake, reaction), 201)


def list_reactions(call: Call) -> Response:
    comment = comment_of(call)
    reactions = comment.reactions
    if "content" in call.query:
        if call.query["content"] not in REACTIONS:
            raise HttpError(422, f"Invalid value for 'content': {call.query['content']!r}")
        reactions = [r for r in reactions if r.content == call.query["content"]]
    page, headers = paginate(call, reactions)
    return json_response([reaction_json(call.fake, r) for r in page], headers=headers)
