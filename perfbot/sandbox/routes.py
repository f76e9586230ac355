"""The route table: method and path template → handler, credential and permissions."""

from __future__ import annotations

from typing import Final

from perfbot.sandbox.plumbing import ApiRoute, api_route, compile_template
from perfbot.sandbox.routes_actions import (
    download_artifact,
    get_artifact,
    get_run,
    list_repo_artifacts,
    list_run_artifacts,
    list_runs,
    rerun,
)
from perfbot.sandbox.routes_app import (
    convert_manifest_code,
    create_installation_token,
    get_app,
    get_delivery,
    list_deliveries,
    redeliver,
)
from perfbot.sandbox.routes_checks import (
    collaborator_permission,
    create_check_run,
    get_check_run,
    get_contents,
    update_check_run,
)
from perfbot.sandbox.routes_git import commit_pulls, compare, get_pull, list_commits, list_pulls
from perfbot.sandbox.routes_issues import (
    create_comment,
    create_issue,
    create_reaction,
    get_comment,
    get_issue,
    list_comments,
    list_issues,
    list_reactions,
    update_comment,
    update_issue,
)

REPO_PATH: Final = "/repos/{owner}/{repo}"
ISSUES_WRITE: Final = ("issues", "pull_requests")


# fmt: off
ROUTES: Final = (
    api_route("GET", "/app", get_app),
    api_route("POST", "/app/installations/{installation_id:int}/access_tokens",
              create_installation_token),
    api_route("GET", "/app/hook/deliveries", list_deliveries),
    api_route("GET", "/app/hook/deliveries/{delivery_id:int}", get_delivery),
    api_route("POST", "/app/hook/deliveries/{delivery_id:int}/attempts", redeliver),
    ApiRoute("POST", compile_template("/app-manifests/{code}/conversions"), convert_manifest_code,
             "jwt", (), "read", public=True),
    api_route("GET", f"{REPO_PATH}/actions/runs", list_runs, "actions"),
    api_route("GET", f"{REPO_PATH}/actions/runs/{{run_id:int}}", get_run, "actions"),
    api_route("GET", f"{REPO_PATH}/actions/runs/{{run_id:int}}/artifacts", list_run_artifacts,
              "actions"),
    api_route("POST", f"{REPO_PATH}/actions/runs/{{run_id:int}}/rerun", rerun, "actions",
              level="write"),
    api_route("GET", f"{REPO_PATH}/actions/artifacts", list_repo_artifacts, "actions"),
    api_route("GET", f"{REPO_PATH}/actions/artifacts/{{artifact_id:int}}", get_artifact, "actions"),
    api_route("GET", f"{REPO_PATH}/actions/artifacts/{{artifact_id:int}}/{{archive_format}}",
              download_artifact, "actions"),
    api_route("GET", f"{REPO_PATH}/pulls", list_pulls, "pull_requests"),
    api_route("GET", f"{REPO_PATH}/pulls/{{number:int}}", get_pull, "pull_requests"),
    api_route("GET", f"{REPO_PATH}/commits/{{sha}}/pulls", commit_pulls, "pull_requests"),
    api_route("GET", f"{REPO_PATH}/commits", list_commits, "contents"),
    api_route("GET", f"{REPO_PATH}/compare/{{basehead:path}}", compare, "contents"),
    api_route("GET", f"{REPO_PATH}/issues", list_issues, *ISSUES_WRITE),
    api_route("POST", f"{REPO_PATH}/issues", create_issue, "issues", level="write"),
    api_route("GET", f"{REPO_PATH}/issues/{{number:int}}", get_issue, *ISSUES_WRITE),
    api_route("PATCH", f"{REPO_PATH}/issues/{{number:int}}", update_issue, *ISSUES_WRITE,
              level="write"),
    api_route("GET", f"{REPO_PATH}/issues/{{number:int}}/comments", list_comments, *ISSUES_WRITE),
    api_route("POST", f"{REPO_PATH}/issues/{{number:int}}/comments", create_comment, *ISSUES_WRITE,
              level="write"),
    api_route("GET", f"{REPO_PATH}/issues/comments/{{comment_id:int}}", get_comment, *ISSUES_WRITE),
    api_route("PATCH", f"{REPO_PATH}/issues/comments/{{comment_id:int}}", update_comment,
              *ISSUES_WRITE, level="write"),
    api_route("POST", f"{REPO_PATH}/issues/comments/{{comment_id:int}}/reactions", create_reaction,
              *ISSUES_WRITE, level="write"),
    api_route("GET", f"{REPO_PATH}/issues/comments/{{comment_id:int}}/reactions", list_reactions,
              *ISSUES_WRITE),
    api_route("GET", f"{REPO_PATH}/contents/{{path:path}}", get_contents, "contents"),
    api_route("GET", f"{REPO_PATH}/collaborators/{{username}}/permission", collaborator_permission,
              "metadata"),
    api_route("POST", f"{REPO_PATH}/check-runs", create_check_run, "checks", level="write"),
    api_route("GET", f"{REPO_PATH}/check-runs/{{check_run_id:int}}", get_check_run, "checks"),
    api_route("PATCH", f"{REPO_PATH}/check-runs/{{check_run_id:int}}", update_check_run, "checks",
              level="write"),
)
# fmt: on
# The reads whose description documents a 304: answered so to a matching If-None-Match.
CONDITIONAL: Final = frozenset({get_pull, get_contents, get_issue})


def match_route(method: str, path: str) -> tuple[ApiRoute | None, dict[str, str]]:
    for route in ROUTES:
        if route.method == method and (found := route.pattern.fullmatch(path)):
            return route, found.groupdict()
    return None, {}
