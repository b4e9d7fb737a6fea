"""Print the share of fully annotated functions per package: every parameter (but ``self`` and
``cls``) and the return annotated. Nested functions and methods count; migrations do not.

Run: ``.venv/bin/python scripts/annotated_share.py`` (the counts of docs and reviews).
"""

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("config", "identity_app", "memory_app")


def fully_annotated(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    args = function.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    params += [param for param in (args.vararg, args.kwarg) if param is not None]
    return function.returns is not None and all(param.annotation is not None for param in params)


def package_of(path: Path) -> str:
    """``memory_app.<package>`` inside memory_app, else the top-level package."""
    parts = path.relative_to(ROOT).parts
    return ".".join(parts[:2]) if parts[0] == "memory_app" and len(parts) > 2 else parts[0]


def main() -> None:
    total: Counter[str] = Counter()
    annotated: Counter[str] = Counter()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    total[package_of(path)] += 1
                    annotated[package_of(path)] += fully_annotated(node)
    for name in sorted(total):
        print(f"{name:24} {annotated[name]:5} / {total[name]:5}  {100 * annotated[name] / total[name]:5.1f} %")
    all_annotated, all_total = sum(annotated.values()), sum(total.values())
    print(f"{'all':24} {all_annotated:5} / {all_total:5}  {100 * all_annotated / all_total:5.1f} %")


if __name__ == "__main__":
    main()
