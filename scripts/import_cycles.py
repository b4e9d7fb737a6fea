"""Fail when any two modules of the project import each other, directly or through others.

Counts every import, including the ones inside functions. Run: ``.venv/bin/python
scripts/import_cycles.py`` (``make lint`` runs it); prints each cycle found.
"""

import sys
from pathlib import Path

import grimp

PACKAGES = ("config", "identity_app", "memory_app")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root, edges in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(edges)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def main() -> int:
    imports = grimp.build_graph(*PACKAGES)
    graph = {m: set() for m in imports.modules}
    for module in imports.modules:
        for imported in imports.find_modules_directly_imported_by(module):
            # A package's __init__ being imported is the package itself; keep real edges only.
            if imported in graph and imported != module:
                graph[module].add(imported)
    cycles = strongly_connected(graph)
    for cycle in cycles:
        print("import cycle:", " <-> ".join(cycle))
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, {len(cycles)} cycle(s)")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
