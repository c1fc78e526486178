#!/usr/bin/env python3
"""Print the long flags `vllm serve` accepts, read from vLLM's own source.

Usage: gen_serve_flags.py SRC > workloads/vllm_serve_flags.txt (`make vllm-flags`)

SRC is a directory holding the `vllm` package of one release (an unpacked
wheel or sdist, or a checkout at its tag). The flags are read without
importing vLLM, from the functions that build the serve parser:
make_arg_parser (the server's own flags), then every Class.add_cli_args it
calls. A flag is a "--" literal given to add_argument, or a field of a
config dataclass when the flags are made from its fields (get_kwargs). As in
vLLM's get_kwargs, a field whose type holds bool gets --no-<flag> too,
except bool | str | None, and an explicit BooleanOptionalAction does.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Where make_arg_parser lives, newest layout first.
PARSER_MODULES = (
    "vllm/entrypoints/common/cli_args.py",
    "vllm/entrypoints/openai/cli_args.py",
)


@dataclass
class ClassInfo:
    node: ast.ClassDef
    path: Path


@dataclass
class Index:
    """Classes of the vllm package by name, parsed when first asked for:
    only files whose text defines the class are parsed."""

    root: Path
    classes: dict[str, ClassInfo | None] = field(default_factory=dict)
    texts: dict[Path, str] = field(default_factory=dict)
    trees: dict[Path, ast.Module] = field(default_factory=dict)

    def build(self) -> None:
        for path in sorted((self.root / "vllm").rglob("*.py")):
            try:
                self.texts[path] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue

    def find(self, name: str) -> ClassInfo | None:
        """The class called name. Where several files define one, the one
        under vllm/config, vllm/engine or vllm/entrypoints wins (where the
        serve parser's classes live), and a warning names it."""
        if name in self.classes:
            return self.classes[name]
        pattern = re.compile(rf"^class {re.escape(name)}\b", re.M)
        found: list[ClassInfo] = []
        for path, text in self.texts.items():
            if not pattern.search(text):
                continue
            if path not in self.trees:
                self.trees[path] = ast.parse(text, str(path))
            node = next((n for n in self.trees[path].body if isinstance(n, ast.ClassDef) and n.name == name), None)
            if node is not None:
                found.append(ClassInfo(node, path))
        found.sort(key=lambda c: (not self.preferred(c.path), str(c.path)))
        if len(found) > 1:
            where = ", ".join(str(c.path.relative_to(self.root)) for c in found)
            print(f"warning: class {name} is defined in {where}; using the first", file=sys.stderr)
        self.classes[name] = found[0] if found else None
        return self.classes[name]

    def preferred(self, path: Path) -> bool:
        rel = path.relative_to(self.root / "vllm").parts
        return rel[0] in ("config", "engine", "entrypoints")

    def lineage(self, name: str) -> list[ast.ClassDef]:
        """The class and its ancestors found in the index, nearest first."""
        out: list[ast.ClassDef] = []
        todo = [name]
        while todo:
            info = self.find(todo.pop(0))
            if info is None or info.node in out:
                continue
            out.append(info.node)
            todo += [b.id for b in info.node.bases if isinstance(b, ast.Name)]
        return out

    def fields(self, name: str) -> dict[str, ast.expr]:
        """Dataclass fields (name to annotation) of a class and its bases."""
        out: dict[str, ast.expr] = {}
        for cls in reversed(self.lineage(name)):
            for stmt in cls.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    if "ClassVar" in ast.unparse(stmt.annotation) or "InitVar" in ast.unparse(stmt.annotation):
                        continue
                    out[stmt.target.id] = stmt.annotation
        return out

    def method(self, cls: str, name: str) -> ast.FunctionDef | None:
        for c in self.lineage(cls):
            for stmt in c.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                    return stmt
        return None


def type_names(annotation: ast.expr) -> set[str]:
    names: set[str] = set()
    for n in ast.walk(annotation):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Constant) and n.value is None:
            names.add("None")
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            # A quoted annotation: "bool | None".
            try:
                names |= type_names(ast.parse(n.value, mode="eval").body)
            except SyntaxError:
                pass
    return names


def negatable(annotation: ast.expr) -> bool:
    """Whether get_kwargs gives the field argparse.BooleanOptionalAction."""
    names = type_names(annotation)
    return "bool" in names and names != {"bool", "str", "None"}


def kebab(name: str) -> str:
    return "--" + name.replace("_", "-")


def is_boolean_optional(node: ast.expr) -> bool:
    return ast.unparse(node).endswith("BooleanOptionalAction")


@dataclass
class Collector:
    index: Index
    flags: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)

    def function(self, fn: ast.FunctionDef) -> None:
        """Flags of one parser-building function."""
        # kwargs variables: name -> (class, field or None)
        kwargs_of: dict[str, tuple[str, str | None]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                src = get_kwargs_source(node.value)
                if src is not None:
                    kwargs_of[node.targets[0].id] = src
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            if node.func.attr == "add_argument":
                self.add_argument(node, kwargs_of)
            elif node.func.attr == "add_cli_args" and isinstance(node.func.value, ast.Name):
                self.cls(node.func.value.id)

    def add_argument(self, call: ast.Call, kwargs_of: dict[str, tuple[str, str | None]]) -> None:
        longs = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--")]
        if not longs and not any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args):
            # A flag name this reader cannot see (a variable, an f-string):
            # say so rather than leave it out silently.
            print(f"warning: line {call.lineno}: add_argument without a literal flag: {ast.unparse(call)[:120]}", file=sys.stderr)
        negate = self.negate(call.keywords, kwargs_of)
        for f in longs:
            self.flags.add(f)
            if negate:
                self.flags.add("--no-" + f[2:])

    def negate(self, keywords: list[ast.keyword], kwargs_of: dict[str, tuple[str, str | None]]) -> bool:
        """Whether the keywords (kwargs unpacked in order, the last one
        winning) make a BooleanOptionalAction."""
        negate = False
        for kw in keywords:
            if kw.arg == "action":
                negate = is_boolean_optional(kw.value)
            elif kw.arg is None and isinstance(kw.value, ast.Dict):
                # **{**cache_kwargs["x"], "default": None}
                inner = [
                    ast.keyword(arg=None if k is None else str(k.value) if isinstance(k, ast.Constant) else "?", value=v)
                    for k, v in zip(kw.value.keys, kw.value.values)
                ]
                negate = self.negate(inner, kwargs_of) or (negate and not any(k.arg == "action" for k in inner))
            elif kw.arg is None:
                src = kwargs_source(kw.value, kwargs_of)
                if src is not None:
                    cls, fname = src
                    ann = self.index.fields(cls).get(fname)
                    negate = ann is not None and negatable(ann)
        return negate

    def cls(self, name: str) -> None:
        """Flags of Name.add_cli_args(parser)."""
        if name in self.done:
            return
        self.done.add(name)
        fn = self.index.method(name, "add_cli_args")
        if fn is None:
            raise SystemExit(f"no add_cli_args for {name}")
        if any(isinstance(n, ast.Call) and ast.unparse(n) == "get_kwargs(cls)" for n in ast.walk(fn)):
            self.from_fields(name)
        else:
            self.function(fn)

    def from_fields(self, name: str) -> None:
        """Flags made by a loop over get_kwargs(cls): one per field."""
        fields = self.index.fields(name)
        negate = {f: negatable(a) for f, a in fields.items()}
        extra: set[str] = set()
        for c in self.index.lineage(name):
            for stmt in c.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == "_customize_cli_kwargs":
                    customize(stmt, fields, negate, extra)
        for f in fields:
            self.flags.add(kebab(f))
            if negate[f]:
                self.flags.add("--no-" + kebab(f)[2:])
        self.flags |= extra


def customize(fn: ast.FunctionDef, fields: dict[str, ast.expr], negate: dict[str, bool], extra: set[str]) -> None:
    """Apply what _customize_cli_kwargs changes: deleted fields, replaced
    actions, extra long flags."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Delete):
            for t in node.targets:
                key = subscript_key(t)
                if key is not None and len(key) == 1:
                    fields.pop(key[0], None)
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            key = subscript_key(node.targets[0])
            if key is None or len(key) != 2 or key[0] not in fields:
                continue
            if key[1] == "action":
                negate[key[0]] = is_boolean_optional(node.value)
            elif key[1] == "flags" and isinstance(node.value, (ast.List, ast.Tuple)):
                for e in node.value.elts:
                    if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.startswith("--"):
                        extra.add(e.value)


def subscript_key(node: ast.expr) -> list[str] | None:
    """kw["a"]["b"] -> ["a", "b"]."""
    keys: list[str] = []
    while isinstance(node, ast.Subscript):
        if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            return None
        keys.insert(0, node.slice.value)
        node = node.value
    return keys if keys and isinstance(node, ast.Name) else None


def get_kwargs_source(value: ast.expr) -> tuple[str, str | None] | None:
    """get_kwargs(Cls) -> (Cls, None); get_kwargs(Cls)["f"] -> (Cls, "f")."""
    fname = None
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
        fname = value.slice.value
        value = value.value
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "get_kwargs"
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Name)
    ):
        return value.args[0].id, fname
    return None


def kwargs_source(value: ast.expr, kwargs_of: dict[str, tuple[str, str | None]]) -> tuple[str, str] | None:
    """**x["f"] or **x (x = get_kwargs(Cls)["f"]) -> (Cls, "f")."""
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and isinstance(value.slice, ast.Constant):
        src = kwargs_of.get(value.value.id)
        if src is not None and src[1] is None:
            return src[0], str(value.slice.value)
    if isinstance(value, ast.Name):
        src = kwargs_of.get(value.id)
        if src is not None and src[1] is not None:
            return src[0], src[1]
    return None


def serve_flags(root: Path) -> list[str]:
    module = next((root / m for m in PARSER_MODULES if (root / m).is_file()), None)
    if module is None:
        raise SystemExit(f"{root}: no {' or '.join(PARSER_MODULES)}")
    tree = ast.parse(module.read_text(encoding="utf-8"), str(module))
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "make_arg_parser"), None)
    if fn is None:
        raise SystemExit(f"{module}: no make_arg_parser")
    index = Index(root)
    index.build()
    c = Collector(index)
    c.function(fn)
    return sorted(c.flags)


def version(root: Path) -> str:
    v = root / "vllm" / "_version.py"
    if v.is_file():
        m = re.search(r"^__version__\s*=.*?['\"]([^'\"]+)['\"]", v.read_text(encoding="utf-8"), re.M)
        if m:
            return m.group(1)
    return "unknown"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: gen_serve_flags.py SRC", file=sys.stderr)
        return 2
    root = Path(argv[1])
    flags = serve_flags(root)
    print(f"# vllm serve long flags of vLLM {version(root)}, one a line.")
    print("# Generated from vLLM's own source by `make vllm-flags` (workloads/vllmflags/gen_serve_flags.py).")
    for f in flags:
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
