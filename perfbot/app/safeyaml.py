"""YAML read as ``yaml.safe_load`` reads it, with the node graph sized before it is built.

A configuration file is written by anyone who can push to a repository: an alias bomb
("billion laughs") or a self-referring alias must be refused before anything walks the
data, and every YAML error said in one plain line.
"""

from __future__ import annotations

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from perfbot.engine.show.escape import clean
from perfbot.errors import PerfbotError

# A legitimate file at the configuration's list caps stays far under this many values; an
# alias bomb passes it after a few levels, long before anyone walks it.
MAX_EXPANDED_NODES = 10_000
# How much of a value a message echoes (a refused tag, a bad setting).
MAX_ECHO_CHARS = 30


class UnsafeYaml(PerfbotError, ValueError):
    """The YAML composed fine but is too expensive to build or walk."""


def safe_load(text: str) -> object:
    """Exactly what yaml.safe_load does, with the node graph sized before it is built.

    SafeLoader only ever builds plain data (no ``!!python/...`` objects); splitting the
    load in two is what lets an alias bomb be refused before anything walks it.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        problem = _graph_problem(node)
        if problem:
            raise UnsafeYaml(problem)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """A YAML error in one line: where, and what (a refused tag, an unquoted glob)."""
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}: " if mark is not None else ""
    problem = exc.problem or exc.context or "syntax error"
    if problem.startswith(_UNKNOWN_TAG):
        # Say it plainly: SafeLoader refused to build an object (`!!python/...` and friends).
        tag = problem.removeprefix(_UNKNOWN_TAG).strip("'").replace("tag:yaml.org,2002:", "!!")
        return f"{where}the YAML tag `{clean(tag, MAX_ECHO_CHARS)}` is not allowed"
    if problem.startswith("found undefined alias"):
        # The usual cause: an unquoted glob such as `*_ms:` reads as a YAML alias.
        return f"{where}a glob starting with `*` needs quotes"
    return where + clean(problem, 70)


_UNKNOWN_TAG = "could not determine a constructor for the tag "


def _graph_problem(root: Node) -> str | None:
    """Why the composed graph is unsafe to build and walk, or None.

    Aliases make the graph a DAG (or, with an alias inside its own anchor, a cycle);
    its size with every alias expanded is what any walk over the built data would cost.
    Sizes are memoised per node, so this runs in time linear in the file.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > MAX_EXPANDED_NODES:
                return f"more than {MAX_EXPANDED_NODES} values once YAML aliases are expanded"
        elif key in open_nodes:
            return "a YAML alias refers to itself"
        elif key not in sizes:
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))
    return None


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []
