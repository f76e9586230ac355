"""Reading ``.github/perfbot.yml``: the repository's and the organisation's file, as YAML read
safely, into a validated ``RepoConfig``, with one reader per key and one line per problem."""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, TypeGuard

import yaml

from perfbot.app.repoconfig import COMMENT_MODES, PERMISSIONS, ConfigResult, RepoConfig
from perfbot.app.safeyaml import MAX_ECHO_CHARS, UnsafeYaml, safe_load, yaml_problem
from perfbot.engine.judge.compare import MetricRule
from perfbot.engine.show.escape import clean
from perfbot.model import Better

MAX_FILE_BYTES = 64 * 1024
MAX_METRIC_RULES = 200
MAX_WORKFLOWS = 50
MAX_EXCLUDE = 1000
MAX_PLATFORMS = 100
MAX_WATCHED = 200
MAX_ERRORS_PER_FILE = 10
MAX_ERROR_CHARS = 160
MAX_LABEL_CHARS = 50  # GitHub's own limit on label names
MAX_NAME_CHARS = 200


def resolve_config(
    repo_text: str | None,
    org_text: str | None,
    repo_name: str,
    repo_path: str = ".github/perfbot.yml",
    org_path: str = "<org>/.github: .github/perfbot.yml",
) -> ConfigResult:
    """Merge the repository's file over the organisation's; ``None`` means there is no file.

    Never raises on any text: every problem becomes one line in ``errors`` and the
    setting concerned falls back to the organisation's value, else the default.
    """
    org = _read_file(org_text, _File(org_path, RepoConfig(), org_level=True))
    repo = _read_file(repo_text, _File(repo_path, org.config(), org_level=False))
    config = repo.config()
    excluded = _excluded(repo_name, org.exclude)
    if excluded:
        # The org's exclusion is a decision about this repository: its own file cannot undo it.
        config = dataclasses.replace(config, enabled=False)
    return ConfigResult(config, (*org.errors, *repo.errors), excluded)


def _excluded(repo_name: str, patterns: tuple[str, ...]) -> bool:
    # The org file only ever covers the org's own repositories, so an owner part carries no
    # information; GitHub treats repository names case-insensitively, and so do we.
    name = repo_name.rpartition("/")[2].lower()
    return any(fnmatchcase(name, pattern.rpartition("/")[2].lower()) for pattern in patterns)


# --- one file -----------------------------------------------------------------------------


@dataclass
class _File:
    """One file being read: where it is, what it set, and what was wrong with it."""

    path: str
    base: RepoConfig  # what the file's settings go over, and what a bad value falls back to
    org_level: bool
    # RepoConfig field → value; each reader checked its value's type before storing it.
    values: dict[str, Any] = field(default_factory=dict)
    rules: tuple[MetricRule, ...] | None = None
    exclude: tuple[str, ...] = ()
    problems: list[str] = field(default_factory=list)

    def error(self, message: str) -> None:
        self.problems.append(_one_line(f"{self.path}: {message}"))

    def invalid(self, key: str, expected: str, value: object, outcome: str = "ignored") -> None:
        self.error(f"`{key}` must be {expected}, got {_echo(value)}; {outcome}")

    def invalid_setting(self, key: str, attribute: str, expected: str, value: object) -> None:
        """A bad value for a setting that falls back to the org's value or the default."""
        using = _echo(getattr(self.base, attribute))
        self.invalid(key, expected, value, f"using {using}")

    @property
    def errors(self) -> tuple[str, ...]:
        # The errors end up in a PR comment: a file with a hundred typos needs no hundred lines.
        shown = self.problems[:MAX_ERRORS_PER_FILE]
        hidden = len(self.problems) - len(shown)
        if hidden:
            shown.append(_one_line(f"{self.path}: {hidden} more problems not shown"))
        return tuple(shown)

    def config(self) -> RepoConfig:
        """The base with this file's settings over it; its metric rules come after the base's."""
        config = dataclasses.replace(self.base, **self.values)
        if self.rules is not None:
            config = dataclasses.replace(config, metrics=(*self.base.metrics, *self.rules))
        return config


def _read_file(text: str | None, file: _File) -> _File:
    if text is None:
        return file
    data = _load(text, file)
    if data is None:
        return file  # an empty file (or a bare `null`) sets nothing
    if not isinstance(data, dict):
        file.error(f"the file must be a mapping of settings, got {_echo(data)}; file ignored")
        return file
    for key, value in data.items():
        _read_key(key, value, file)
    return file


def _read_key(key: object, value: object, file: _File) -> None:
    reader = _READERS.get(key) if isinstance(key, str) else None
    if key == "exclude" and not file.org_level:
        file.error("`exclude` only works in the organisation's file; ignored")
    elif reader is None:
        file.error(f"unknown key {_key_echo(key)} ignored{_suggestion(key, _READERS)}")
    elif value is not None:  # `key:` with nothing after it reads as "not set"
        reader(value, file)


def _suggestion(key: object, known: Collection[str]) -> str:
    if not isinstance(key, str):
        return ""
    close = difflib.get_close_matches(key[:MAX_NAME_CHARS].lower(), list(known), n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""


# --- YAML ------------------------------------------------------------------------------------


def _load(text: str, file: _File) -> object:
    """The file's data, or None after recording why it cannot be used."""
    if len(text) > MAX_FILE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        file.error("file larger than 64 KiB; ignored")
        return None
    try:
        return safe_load(text)
    except UnsafeYaml as exc:
        file.error(f"{exc}; file ignored")
    except yaml.MarkedYAMLError as exc:
        file.error(f"not valid YAML ({yaml_problem(exc)}); file ignored")
    except yaml.YAMLError:
        file.error("not valid YAML (it contains characters YAML does not allow); file ignored")
    except RecursionError:
        file.error("YAML nested too deeply; file ignored")
    except Exception:
        # PyYAML fed hostile text also raises plain ValueError or AttributeError (`!!timestamp
        # x`, a 5000-digit int): whatever it is, the file is unusable, and a config file must
        # never take the service down.
        file.error("a value in the file could not be read as YAML; file ignored")
    return None


# --- the keys --------------------------------------------------------------------------------


def _read_bool(key: str) -> Callable[[object, _File], None]:
    def read(value: object, file: _File) -> None:
        if isinstance(value, bool):
            file.values[key] = value
        else:
            file.invalid_setting(key, key, "true or false", value)

    return read


def _read_percent(key: str) -> Callable[[object, _File], None]:
    def read(value: object, file: _File) -> None:
        number = _percent(value)
        if number is None:
            file.invalid_setting(key, key, "a number ≥ 0", value)
        else:
            file.values[key] = number

    return read


def _percent(value: object) -> float | None:
    """A finite number ≥ 0, or None."""
    if isinstance(value, str):
        return _percent_text(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int with hundreds of digits
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _percent_text(text: str) -> float | None:
    # `threshold: 2%` is how people write a percentage; YAML reads it as a string.
    digits = text.strip()
    if not digits.endswith("%"):
        return None
    try:
        return _percent(float(digits[:-1]))
    except ValueError:
        return None


def _read_workflows(value: object, file: _File) -> None:
    names = _names(value, "workflows", MAX_WORKFLOWS, file)
    if names is not None:
        file.values["workflows"] = names


def _read_platforms(value: object, file: _File) -> None:
    names = _names(value, "platforms", MAX_PLATFORMS, file)
    if names is not None:
        file.values["platforms"] = names


_WATCH_KEYS = ("enabled", "metrics", "min_change", "issues")


def _read_watch(value: object, file: _File) -> None:
    """``watch: false`` / ``true``, or a mapping of its settings (then it is on unless
    ``enabled: false``); a bad setting falls back alone, the others still apply."""
    if isinstance(value, bool):
        file.values["watch"] = dataclasses.replace(file.base.watch, enabled=value)
        return
    if not isinstance(value, dict):
        file.invalid("watch", "true, false or a mapping of " + ", ".join(_WATCH_KEYS), value)
        return
    settings: dict[str, Any] = {"enabled": True}
    for key, sub_value in _sub_mapping(value, "watch", _WATCH_KEYS, file):
        if key in ("enabled", "issues") and isinstance(sub_value, bool):
            settings[key] = sub_value
        elif key == "metrics" and (globs := _names(sub_value, "watch.metrics", MAX_WATCHED, file)):
            settings[key] = globs
        elif key == "min_change" and (change := _percent(sub_value)) is not None:
            settings[key] = change
        elif key != "metrics":
            expected = "a number ≥ 0" if key == "min_change" else "true or false"
            file.invalid(f"watch.{key}", expected, sub_value)
    file.values["watch"] = dataclasses.replace(file.base.watch, **settings)


def _read_exclude(value: object, file: _File) -> None:
    names = _names(value, "exclude", MAX_EXCLUDE, file)
    if names is not None:
        file.exclude = names


def _names(value: object, key: str, limit: int, file: _File) -> tuple[str, ...] | None:
    """A list of non-empty strings (or one string), checked item by item without recursion."""
    items = [value] if isinstance(value, str) else value
    expected = "a list of non-empty strings"
    if not isinstance(items, list):
        file.invalid(key, expected, value)
        return None
    if len(items) > limit:
        file.error(f"`{key}` lists {len(items)} entries, more than {limit}; ignored")
        return None
    names = [item for item in items if _is_name(item)]
    if len(names) < len(items):
        file.invalid(key, expected, next(item for item in items if not _is_name(item)))
        return None
    return tuple(names)


def _is_name(item: object) -> TypeGuard[str]:
    """A non-blank string of sane length without control characters."""
    return (
        isinstance(item, str)
        and len(item.strip()) > 0
        and len(item) <= MAX_NAME_CHARS
        and item.isprintable()
    )


def _read_artifacts(value: object, file: _File) -> None:
    fields = {"report": "report_artifact", "pr_number": "pr_number_artifact"}
    for sub_key, sub_value in _sub_mapping(value, "artifacts", fields, file):
        attribute = fields[sub_key]
        if _is_name(sub_value):
            file.values[attribute] = sub_value
        else:
            file.invalid_setting(f"artifacts.{sub_key}", attribute, "an artifact name", sub_value)


def _read_permission(key: str) -> Callable[[object, _File], None]:
    """``rerun:`` or ``accept:``, a mapping of its ``permission``."""
    attribute = f"{key}_permission"

    def read(value: object, file: _File) -> None:
        for _, sub_value in _sub_mapping(value, key, ("permission",), file):
            permission = sub_value.lower() if isinstance(sub_value, str) else None
            if permission in PERMISSIONS:
                file.values[attribute] = permission
            else:
                expected = "one of " + ", ".join(PERMISSIONS)
                file.invalid_setting(f"{key}.permission", attribute, expected, sub_value)

    return read


def _sub_mapping(
    value: object, key: str, known: Collection[str], file: _File
) -> list[tuple[str, object]]:
    """The known, set entries of a nested mapping; everything else becomes an error."""
    if not isinstance(value, dict):
        file.invalid(key, "a mapping of " + ", ".join(known), value)
        return []
    entries = []
    for sub_key, sub_value in value.items():
        if not isinstance(sub_key, str) or sub_key not in known:
            nested = _key_echo(sub_key, prefix=f"{key}.")
            file.error(f"unknown key {nested} ignored{_suggestion(sub_key, known)}")
        elif sub_value is not None:
            entries.append((sub_key, sub_value))
    return entries


def _read_comment(value: object, file: _File) -> None:
    """``comment: always | on-change | never``."""
    mode = value.lower() if isinstance(value, str) else None
    for known in COMMENT_MODES:
        if mode == known:
            file.values["comment"] = known
            return
    file.invalid_setting("comment", "comment", "one of " + ", ".join(COMMENT_MODES), value)


def _read_mute_label(value: object, file: _File) -> None:
    if _is_name(value) and len(value) <= MAX_LABEL_CHARS:
        file.values["mute_label"] = value
        return
    expected = f"a label name of 1 to {MAX_LABEL_CHARS} characters"
    file.invalid_setting("mute_label", "mute_label", expected, value)


def _read_metrics(value: object, file: _File) -> None:
    if not isinstance(value, dict):
        file.invalid("metrics", "a mapping of metric name globs to settings", value)
        return
    if len(value) > MAX_METRIC_RULES:
        file.error(f"`metrics` has {len(value)} rules, more than {MAX_METRIC_RULES}; ignored")
        return
    rules = (_metric_rule(pattern, body, file) for pattern, body in value.items())
    file.rules = tuple(rule for rule in rules if rule is not None)


_RULE_KEYS = ("better", "threshold", "tolerance", "ignore", "report_only")


def _metric_rule(pattern: object, body: object, file: _File) -> MetricRule | None:
    """One rule; a bad setting inside it is dropped alone, so the rule's others still apply."""
    if not _is_name(pattern):
        file.invalid("metrics", "keyed by metric name globs", pattern, "rule ignored")
        return None
    if body is None:
        return None  # `"*_ms":` with nothing under it sets nothing
    label = f"metrics.{clean(pattern, MAX_ECHO_CHARS)}"
    settings: dict[str, Any] = {}  # MetricRule field → value of the type _rule_setting checked
    for key, sub_value in _sub_mapping(body, label, _RULE_KEYS, file):
        parsed = _rule_setting(key, sub_value)
        if parsed is None:
            file.invalid(f"{label}.{key}", _RULE_EXPECTED[key], sub_value)
        else:
            settings[key] = parsed
    return MetricRule(pattern, **settings)


_RULE_EXPECTED = {
    "better": "higher or lower",
    "threshold": "a number ≥ 0",
    "tolerance": "a number ≥ 0",
    "ignore": "true or false",
    "report_only": "true or false",
}


def _rule_setting(key: str, value: object) -> object | None:
    if key == "better":
        word = value.lower() if isinstance(value, str) else None
        return Better(word) if word in ("higher", "lower") else None
    if key in ("ignore", "report_only"):
        return value if isinstance(value, bool) else None
    return _percent(value)


_READERS: dict[str, Callable[[object, _File], None]] = {
    "enabled": _read_bool("enabled"),
    "workflows": _read_workflows,
    "artifacts": _read_artifacts,
    "threshold": _read_percent("threshold"),
    "tolerance": _read_percent("tolerance"),
    "metrics": _read_metrics,
    "rerun": _read_permission("rerun"),
    "accept": _read_permission("accept"),
    "mute_label": _read_mute_label,
    "comment": _read_comment,
    "check_run": _read_bool("check_run"),
    "fail_on_regression": _read_bool("fail_on_regression"),
    "confirm": _read_bool("confirm"),
    "platforms": _read_platforms,
    "watch": _read_watch,
    "exclude": _read_exclude,
}


# --- messages ------------------------------------------------------------------------------


def _echo(value: object) -> str:
    """A short, inert description of a value from the file, never a walk over it.

    Containers are only named: an alias bomb's repr is exponential, and the line is
    shown to PR authors anyway.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 64 else "a very large number"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return f"'{clean(value, MAX_ECHO_CHARS)}'"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _key_echo(key: object, prefix: str = "") -> str:
    shown = clean(key, MAX_ECHO_CHARS) if isinstance(key, str) else _echo(key)
    return f"`{prefix}{shown}`"


def _one_line(message: str) -> str:
    # clean() folds line breaks and drops control characters, then cuts with an ellipsis.
    return clean(message, MAX_ERROR_CHARS)
