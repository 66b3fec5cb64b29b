"""Custom operators described in a small IDL: parse (lark), check (names, dtypes, shapes),
evaluate with numpy, lower to library instructions, generate C++ (``pypto codegen``), load
(``pypto.load_custom_insn``). The language is described in docs/user-guide.md."""
from __future__ import annotations

from pathlib import Path

from ..errors import IdlError, IdlNameError
from . import ast
from .check import check as _check
from .evaluate import bind, evaluate
from .fmt import format_module, format_operator
from .parser import parse_tree


def parse(text: str | bytes, file: str = "<idl>") -> ast.Module:
    """Parse and check IDL text (every operator); the first problem is raised as an IdlError."""
    module, source = parse_tree(text, file)
    first: dict[str, ast.Loc] = {}
    for op in module.operators:
        if op.name in first:
            raise IdlNameError(f"operator {op.name} is defined twice (first at line "
                               f"{first[op.name].line})", file=file, line=op.loc.line,
                               column=op.loc.column, source=source,
                               rule="operator names are unique in a file", fix="rename one of them")
        first[op.name] = op.loc
        _check(op, source)
    return module


def parse_file(path: str | Path) -> ast.Module:
    """Parse and check an IDL file; errors name the file by the path as given."""
    try:
        data = Path(path).read_bytes()
    except (OSError, ValueError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise IdlError(f"cannot read {path}: {why}", file=str(path), rule="parse_file reads an "
                       "IDL text file", fix="check the path and its permissions") from None
    return parse(data, str(path))


def check(op: ast.Operator, source: str | None = None) -> ast.Operator:
    """Fill every expression node's dtype and shape (and ``op.env``); raise the first IdlError."""
    return _check(op, source)


__all__ = ["ast", "bind", "check", "evaluate", "format_module", "format_operator", "parse",
           "parse_file"]
