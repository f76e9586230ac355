"""Pull requests, commits and comparisons."""

from __future__ import annotations

from typing import Final

from starlette.responses import Response

from perfbot.sandbox.issue_json import commit_json
from perfbot.sandbox.models import Pull, Repo
from perfbot.sandbox.plumbing import Call, HttpError, json_response, paginate
from perfbot.sandbox.repo_json import pull_json


def list_pulls(call: Call) -> Response:
    query = call.query
    pulls = list(call.repo.pulls.values())
    state = query.get("state", "open")
    if state != "all":
        pulls = [p for p in pulls if p.state == state]
    if "head" in query:
        # "owner:branch" (GitHub also takes a bare branch for the repository itself).
        owner, _, branch = query["head"].rpartition(":")
        owner = owner or call.repo.owner
        pulls = [
            p
            for p in pulls
            if p.head_ref == branch and p.head_repo_full_name.split("/")[0].lower() == owner.lower()
        ]
    if "base" in query:
        pulls = [p for p in pulls if p.base_ref == query["base"]]
    pulls.sort(key=lambda p: p.number, reverse=query.get("direction", "desc") == "desc")
    page, headers = paginate(call, pulls)
    return json_response([pull_json(call.fake, p, simple=True) for p in page], headers=headers)


def pull_of(call: Call) -> Pull:
    pull = call.repo.pulls.get(call.int_param("number"))
    if pull is None:
        raise HttpError(404, "Not Found")
    return pull


def get_pull(call: Call) -> Response:
    return json_response(pull_json(call.fake, pull_of(call)))


def commit_pulls(call: Call) -> Response:
    """The pull requests of a commit: those whose head it is, and the one whose merge
    brought it to its branch."""
    repo, sha = call.repo, call.params["sha"]
    found = {p.number: p for p in repo.pulls.values() if sha in (p.head_sha, p.merge_commit_sha)}
    commit = repo.commits.get(sha)
    if commit is not None and commit.pull in repo.pulls:
        found[commit.pull] = repo.pulls[commit.pull]
    pulls = [found[number] for number in sorted(found)]
    page, headers = paginate(call, pulls)
    return json_response([pull_json(call.fake, p, simple=True) for p in page], headers=headers)


def resolved_ref(repo: Repo, ref: str) -> str:
    """The sha a branch name, a sha or an unambiguous sha prefix (7+) names; else 404."""
    if ref in repo.branches:
        return repo.branches[ref]
    if ref in repo.commits:
        return ref
    if len(ref) >= 7:
        matches = [sha for sha in repo.commits if sha.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
    raise HttpError(404, "Not Found")


def ancestry(repo: Repo, sha: str) -> set[str]:
    """``sha`` and every commit it descends from (among the fake's known commits)."""
    seen: set[str] = set()
    waiting = [sha]
    while waiting:
        current = waiting.pop()
        if current in seen or current not in repo.commits:
            continue
        seen.add(current)
        waiting.extend(repo.commits[current].parents)
    return seen


def list_commits(call: Call) -> Response:
    """``GET …/commits``: the commits reachable from ``sha`` (a branch, a sha; the default
    branch without it), newest first: by committer date, then the later made first."""
    fake, repo = call.fake, call.repo
    if not repo.commits:
        raise HttpError(409, "Git Repository is empty.")
    head = resolved_ref(repo, call.query.get("sha", repo.default_branch))
    reachable = ancestry(repo, head)
    made = {sha: index for index, sha in enumerate(repo.commits)}
    listed = sorted(reachable, key=lambda sha: (repo.commits[sha].date, made[sha]), reverse=True)
    page, headers = paginate(call, listed)
    return json_response(
        [commit_json(fake, repo, repo.commits[sha]) for sha in page], headers=headers
    )


# Without page or per_page, GitHub's comparison lists at most this many commits.
COMPARE_COMMITS_LIMIT: Final = 250


def compare(call: Call) -> Response:
    """``GET …/compare/{base}...{head}``: ``git log base..head`` oldest first, and how the
    two stand (``ahead``, ``behind``, ``diverged``, ``identical``)."""
    fake, repo = call.fake, call.repo
    base_ref, dots, head_ref = call.params["basehead"].partition("...")
    if not dots or not base_ref or not head_ref:
        raise HttpError(404, "Not Found")
    base, head = resolved_ref(repo, base_ref), resolved_ref(repo, head_ref)
    below_base, below_head = ancestry(repo, base), ancestry(repo, head)
    order = list(repo.commits)  # creation order: parents before children
    ahead = [repo.commits[c] for c in order if c in below_head and c not in below_base]
    behind = [c for c in order if c in below_base and c not in below_head]
    common = [c for c in order if c in below_base and c in below_head]
    if not common:
        raise HttpError(404, f"No common ancestor between {base_ref} and {head_ref}.")
    if not ahead and not behind:
        status = "identical"
    elif not behind:
        status = "ahead"
    elif not ahead:
        status = "behind"
    else:
        status = "diverged"
    headers: dict[str, str] = {}
    if "page" in call.query or "per_page" in call.query:
        listed, headers = paginate(call, ahead)
    else:
        listed = ahead[:COMPARE_COMMITS_LIMIT]
    api = f"{fake.api_url}/repos/{repo.full_name}"
    html = f"https://github.com/{repo.full_name}"
    basehead = call.params["basehead"]
    content = {
        "url": f"{api}/compare/{basehead}",
        "html_url": f"{html}/compare/{basehead}",
        "permalink_url": f"{html}/compare/{repo.owner}:{base[:7]}...{repo.owner}:{head[:7]}",
        "diff_url": f"{html}/compare/{basehead}.diff",
        "patch_url": f"{html}/compare/{basehead}.patch",
        "base_commit": commit_json(fake, repo, repo.commits[base]),
        "merge_base_commit": commit_json(fake, repo, repo.commits[common[-1]]),
        "status": status,
        "ahead_by": len(ahead),
        "behind_by": len(behind),
        "total_commits": len(ahead),
        "commits": [commit_json(fake, repo, c) for c in listed],
        "files": [],
    }
    return json_response(content, headers=headers)
