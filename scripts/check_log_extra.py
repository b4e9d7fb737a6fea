"""Fail when a log call passes an ``extra`` key that ``logging.LogRecord`` reserves.

``logger.info("...", extra={"created": 3})`` raises ``KeyError`` inside the call (only when the
level is enabled, so it hides until a deployment logs at that level). This walks every module of
the project and checks the keys of each ``extra=`` given to a logger call: a dict literal, a
``dict(...)`` call, or a name bound in the same function to one of those (including keys set
later with ``name["key"] = ...``). Keys it cannot see (``**spread``, computed keys) are left to
the test suite, which builds and formats every record at DEBUG (tests/logcheck.py).

Run: ``.venv/bin/python scripts/check_log_extra.py [paths...]`` (``make lint`` runs it).
"""

import ast
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("config", "identity_app", "memory_app", "scripts", "bench", "tests")
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})
# What makeRecord refuses: every attribute of a fresh record, plus the two the formatter sets.
RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime", "taskName"}


def _dict_keys(node: ast.AST) -> list[tuple[str, int]] | None:
    """The constant keys of a dict display or ``dict(key=...)`` call, else None."""
    if isinstance(node, ast.Dict):
        return [(k.value, k.lineno) for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [(kw.arg, node.lineno) for kw in node.keywords if kw.arg is not None]
    return None


def _scopes(tree: ast.Module):
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield node


def _own_nodes(scope: ast.AST):
    """The nodes of ``scope`` that are not inside a nested function."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))


def _name_keys(scope: ast.AST) -> dict[str, list[tuple[str, int]]]:
    """name → the constant keys of every dict bound to it or stored into it in ``scope``."""
    found: dict[str, list[tuple[str, int]]] = {}
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and node.value is not None:
                    keys = _dict_keys(node.value)
                    if keys is not None:
                        found.setdefault(target.id, []).extend(keys)
                elif (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and isinstance(target.slice, ast.Constant)
                    and isinstance(target.slice.value, str)
                ):
                    found.setdefault(target.value.id, []).append((target.slice.value, node.lineno))
    return found


def check_source(source: str, filename: str = "<source>") -> list[str]:
    """One line per reserved key given to a log call's ``extra`` in ``source``."""
    tree = ast.parse(source, filename=filename)
    problems = []
    for scope in _scopes(tree):
        names = None
        for node in _own_nodes(scope):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOG_METHODS
            ):
                continue
            for keyword in node.keywords:
                if keyword.arg != "extra":
                    continue
                keys = _dict_keys(keyword.value)
                if keys is None and isinstance(keyword.value, ast.Name):
                    if names is None:
                        names = _name_keys(scope)
                    keys = names.get(keyword.value.id, [])
                for key, line in keys or []:
                    if key in RESERVED:
                        problems.append(
                            f"{filename}:{line}: extra key {key!r} is a LogRecord attribute; "
                            "logging refuses it (KeyError) — rename it"
                        )
    return problems


def main(argv: list[str]) -> int:
    paths = [Path(p) for p in argv] or [ROOT / p for p in PACKAGES]
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*.py")))]
    problems = []
    for path in files:
        if ".venv" in path.parts or "var" in path.relative_to(ROOT).parts[:1]:
            continue
        problems.extend(check_source(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))))
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
