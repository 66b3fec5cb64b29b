"""Canonical IDL text of an operator: what a generated library carries as its manifest, and what
re-parses to the same operator (comments and spacing are not kept)."""
from __future__ import annotations

from . import ast as A
from .parser import IDL_NAME

# binding strength: + - bind loosest, then * / @, then unary minus
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "@": 2}
_UNARY_PREC = 3


def _number(v: int | float) -> str:
    return repr(float(v)) if isinstance(v, float) else str(int(v))


def expr_text(e: A.Expr, outer: int = 0) -> str:
    """The expression in IDL syntax, with only the parentheses precedence needs."""
    if isinstance(e, A.Name):
        return e.id
    if isinstance(e, A.Const):
        text = _number(e.value)
        return f"({text})" if text.startswith("-") and outer else text
    if isinstance(e, A.Unary):
        return f"({_unary(e)})" if outer > _UNARY_PREC else _unary(e)
    if isinstance(e, A.BinOp):
        p = _PREC[e.op]
        # left-associative: a right operand of the same level needs parentheses
        text = f"{expr_text(e.lhs, p)} {e.op} {expr_text(e.rhs, p + 1)}"
        return f"({text})" if p < outer else text
    args = [expr_text(a) for a in e.args]
    if e.func == "cast" and e.to is not None:
        args.append(IDL_NAME[e.to])
    return f"{e.func}({', '.join(args)})"


def _unary(e: A.Unary) -> str:
    operand = expr_text(e.operand, _UNARY_PREC)
    # "- -x" rather than "--x", so the text never looks like a decrement
    return f"- {operand}" if operand.startswith("-") else f"-{operand}"


def _field(f: A.TensorField | A.ScalarField) -> str:
    if isinstance(f, A.ScalarField):
        default = "" if f.default is None else f" = {_number(f.default)}"
        return f"Scalar<{f.name}, {IDL_NAME[f.dtype]}>{default};"
    return f"Tensor<{f.name}, {IDL_NAME[f.dtype]} [{', '.join(str(d) for d in f.dims)}]>;"


def format_operator(op: A.Operator) -> str:
    """Canonical IDL text of one operator (with its ``package`` line if it has one)."""
    lines = [f"package {op.package};", ""] if op.package else []
    lines += [f"operator {op.name} {{", "    input {"]
    lines += [f"        {_field(f)}" for f in op.inputs] + ["    }", "    output {"]
    lines += [f"        {_field(f)}" for f in op.outputs] + ["    }", "    computation {"]
    lines += [f"        {s.target} = {expr_text(s.value)};" for s in op.body] + ["    }", "}"]
    return "\n".join(lines) + "\n"


def format_module(module: A.Module) -> str:
    """Canonical text of a whole file: one ``package`` line, then every operator (joining
    format_operator's texts would repeat the package line, which the grammar allows once)."""
    head = [f"package {module.package};\n"] if module.package else []
    body = [format_operator(_without_package(op)) for op in module.operators]
    return "\n".join(head + body)


def _without_package(op: A.Operator) -> A.Operator:
    from dataclasses import replace
    return replace(op, package=None)
