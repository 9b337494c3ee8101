"""The shape of the code, read from the source with `ast` (nothing is imported or run).

- No import cycles between the modules of src/aitp, imports under `if TYPE_CHECKING:` and inside
  functions included: a module can be read (and tested) knowing only what is below it.
- No module outside `aitp.store` imports a store backend (`aitp.store.sqlite`, `aitp.store.mongo`): the
  rest of the code sees the store's interface only, and `aitp.store.open_store` picks the backend.
- A binding (`aitp.bindings.<protocol>`) imports the core and nothing imports it back: only other modules
  of the bindings, the composition root (`aitp.app`, `aitp.cli`) and the Python client of the Threads wire
  (`aitp.client`, which reads that binding's models) may. A new binding is a folder; removing one breaks
  nothing but the root.
- `aitp.identity` (proofs of who an actor is) is a leaf: it imports nothing else of the package, so the Python
  client signs with the very code the server verifies with, and carries no server along.
- Only `aitp.server` imports the web server (uvicorn): what couples to its internals is behind one wall, and
  changing servers touches one package.
- No binding imports another: what the HTTP faces share lives in `aitp.bindings.http`, which imports no other
  binding. The core (everything but the bindings, the server and the composition root) imports no web framework
  (FastAPI, Starlette, uvicorn), and only the A2A binding imports the A2A SDK.
- No module awaits with `asyncio.wait_for`: on Python 3.11 it returns the inner result when that completes in
  the loop turn of a cancellation, and the cancellation is lost (a loop awaiting it then never ends, as the
  MongoDB heartbeat did in CI). `asyncio.timeout` does not lose it.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "aitp"
BACKENDS = ("aitp.store.sqlite", "aitp.store.mongo")
BINDINGS = "aitp.bindings"
DELIVERIES = "aitp.deliveries"
BINDING_IMPORTERS = ("aitp.app", "aitp.cli", "aitp.client")
SERVER = "aitp.server"
SHARED_HTTP = "aitp.bindings.http"
ROOT = ("aitp.app", "aitp.cli", "aitp.command")
WEB_FRAMEWORKS = ("fastapi", "starlette", "uvicorn")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    return {module_name(path): path for path in sorted((SRC / PACKAGE).rglob("*.py"))}


def resolve(name: str) -> str | None:
    """The package module `name` refers to: itself, or the package or module that holds it (an imported
    function or class); None outside the package."""
    known = modules()
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports_of(module: str) -> frozenset[str]:
    """The package modules `module` imports, wherever the import statement is."""
    path = modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from a import b` imports a.b when b is a module, else something a defines
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for name in names:
            target = resolve(name) if name.split(".")[0] == PACKAGE else None
            if target is not None and target != module:
                found.add(target)
    return frozenset(found)


@cache
def libraries_of(module: str) -> frozenset[str]:
    """The top-level names of the libraries outside the package that `module` imports, wherever the import is."""
    tree = ast.parse(modules()[module].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return frozenset(found - {PACKAGE})


def graph() -> dict[str, frozenset[str]]:
    return {module: imports_of(module) for module in modules()}


def cycles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_graph_is_read_from_the_source() -> None:
    """A guard on the reader: imports of every kind are found, and resolved to modules."""
    edges = graph()
    assert "aitp.app" in edges and "aitp.store.base" in edges
    assert "aitp.store.base" in edges["aitp.store"]  # `from aitp.store.base import ...` in a package
    assert "aitp.config" in edges["aitp.app"]  # a class imported from a module
    assert cycles({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}) == [
        ["a", "b", "c"]
    ]


def test_no_module_imports_itself_back() -> None:
    assert cycles(graph()) == []


def test_only_the_store_package_imports_a_store_backend() -> None:
    importers = {
        module: sorted(target for target in targets if target.startswith(BACKENDS))
        for module, targets in graph().items()
        if not module.startswith("aitp.store")
    }
    assert {module: backends for module, backends in importers.items() if backends} == {}


def is_within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def test_nothing_outside_the_bindings_and_the_root_imports_a_binding() -> None:
    importers = {
        module: sorted(target.removeprefix(BINDINGS + ".") for target in targets if is_within(target, (BINDINGS,)))
        for module, targets in graph().items()
        if not is_within(module, (BINDINGS, *BINDING_IMPORTERS))
    }
    assert {module: names for module, names in importers.items() if names} == {}


def test_no_core_module_imports_a_way_out() -> None:
    """Deliveries (webhooks, A2A outbound) read the core; only the composition root starts them."""
    faces = (BINDINGS, DELIVERIES)
    importers = {
        module: sorted(target for target in targets if is_within(target, (DELIVERIES,)))
        for module, targets in graph().items()
        if not is_within(module, (*faces, *BINDING_IMPORTERS))
    }
    assert {module: names for module, names in importers.items() if names} == {}


def binding_of(module: str) -> str | None:
    """`aitp.bindings.a2a.handler` -> `aitp.bindings.a2a`; None outside the bindings."""
    parts = module.split(".")
    return ".".join(parts[:3]) if is_within(module, (BINDINGS,)) and len(parts) > 2 else None


def test_no_binding_imports_another_but_the_shared_http_one() -> None:
    crossings = {
        module: sorted(
            target
            for target in targets
            if binding_of(target) not in (None, binding_of(module)) and binding_of(target) != SHARED_HTTP
        )
        for module, targets in graph().items()
        if binding_of(module) is not None
    }
    shared = {
        module: sorted(target for target in targets if binding_of(target) not in (None, SHARED_HTTP))
        for module, targets in graph().items()
        if binding_of(module) == SHARED_HTTP
    }
    assert {module: names for module, names in crossings.items() if names} == {}
    assert {module: names for module, names in shared.items() if names} == {}


def test_only_the_server_package_imports_uvicorn() -> None:
    importers = sorted(
        module for module in modules() if "uvicorn" in libraries_of(module) and not is_within(module, (SERVER,))
    )
    assert importers == []


def test_the_core_imports_no_web_framework() -> None:
    importers = {
        module: sorted(libraries_of(module) & set(WEB_FRAMEWORKS))
        for module in modules()
        if not is_within(module, (BINDINGS, SERVER, *ROOT))
    }
    assert {module: names for module, names in importers.items() if names} == {}


def test_only_the_a2a_binding_imports_the_a2a_sdk() -> None:
    importers = sorted(
        module for module in modules() if "a2a" in libraries_of(module) and not is_within(module, (f"{BINDINGS}.a2a",))
    )
    assert importers == []


def test_the_library_reader_sees_imports_of_every_kind() -> None:
    """A guard on the reader: the server's own modules are seen importing uvicorn, the A2A binding the SDK."""
    assert any("uvicorn" in libraries_of(module) for module in modules() if is_within(module, (SERVER,)))
    assert any("a2a" in libraries_of(module) for module in modules() if is_within(module, (f"{BINDINGS}.a2a",)))
    assert "fastapi" in libraries_of("aitp.app")


def test_the_identity_package_is_a_leaf() -> None:
    importers = {
        module: sorted(target for target in targets if not is_within(target, ("aitp.identity",)))
        for module, targets in graph().items()
        if is_within(module, ("aitp.identity",))
    }
    assert {module: names for module, names in importers.items() if names} == {}


def test_no_module_awaits_with_asyncio_wait_for() -> None:
    calls = {
        name: node.lineno
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "wait_for" and getattr(node.value, "id", None) == "asyncio"
    }
    assert calls == {}
