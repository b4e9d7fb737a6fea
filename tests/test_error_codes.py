"""Every error code the API answers with is declared once per package (``<package>/errors.py``,
an ``ErrorCode`` enumeration, as Saleor keeps them) and listed in docs/API.md's error table;
no code is a string literal where an error is raised."""

import ast
import importlib
import re
from pathlib import Path

from tests.serving import ROOT

PACKAGES = ("config", "identity_app", "memory_app")


def _sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def declared_codes() -> dict[str, set[str]]:
    found = {}
    for path in _sources():
        if path.name == "errors.py" and path.parent.name != "api":
            module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
            if hasattr(module, "ErrorCode"):
                found[module.__name__] = {member.value for member in module.ErrorCode}
    return found


def documented_codes() -> set[str]:
    text = (ROOT / "docs" / "API.md").read_text("utf-8")
    section = text.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\| \d{3} \|", line)]
    return {code for row in rows for code in re.findall(r"`([a-z0-9_]+)`", row.split("|")[2])}


def literal_codes(path: Path) -> list[str]:
    """Where a code is a string literal: ``code="…"`` given to anything but a form or serializer
    ``ValidationError``, a class's ``code = "…"``, ``error_body("…", …)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Call):
            callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            for keyword in node.keywords:
                value = keyword.value
                literal = isinstance(value, ast.JoinedStr) or (
                    isinstance(value, ast.Constant) and isinstance(value.value, str)
                )
                if keyword.arg == "code" and literal and callee != "ValidationError":
                    found.append(f"{path.name}:{node.lineno} {ast.unparse(value).strip(chr(39))}")
            if callee == "error_body" and node.args and isinstance(node.args[0], ast.Constant):
                found.append(f"{path.name}:{node.lineno} {node.args[0].value}")
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                target = item.targets[0] if isinstance(item, ast.Assign) and len(item.targets) == 1 else None
                if isinstance(target, ast.Name) and target.id == "code" and isinstance(item.value, ast.Constant):
                    found.append(f"{path.name}:{item.lineno} {item.value.value}")
    return found


def test_every_declared_code_is_documented_and_every_documented_code_declared():
    declared = set().union(*declared_codes().values())
    documented = documented_codes()
    assert declared - documented == set(), "declared in an errors.py, missing from docs/API.md's table"
    assert documented - declared == set(), "in docs/API.md's table, declared by no errors.py"


def test_no_code_is_a_literal_where_an_error_is_raised():
    literals = [hit for path in _sources() for hit in literal_codes(path)]
    assert literals == []


def test_the_checks_find_what_they_look_for(tmp_path):
    """The scan sees a literal code in each form it looks for, and leaves the enum alone."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        'class Gone(NotFound):\n    code = "gone"\n'
        'raise InvalidInput("x", code="bad")\n'
        'error_body("oops", "Oops.")\n'
        'raise ValidationError("x", code="form_only")\n'
        "raise InvalidInput('x', code=ErrorCode.BAD)\n"
        'raise InvalidInput("x", code=f"invalid_{name}")\n'
    )
    assert [hit.split()[1] for hit in literal_codes(sample)] == ["gone", "bad", "oops", "f'invalid_{name}"]
    assert declared_codes()["config.errors"] >= {"invalid", "not_found", "throttled"}
