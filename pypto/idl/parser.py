"""IDL text -> syntax tree (ast.py), with lark (grammar.lark, LALR). Every failure, lark's own
included, becomes an IdlSyntaxError (or IdlTypeError for an unknown dtype) at its line/column."""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import lark

from .. import dtypes as D
from ..errors import IdlError, IdlSyntaxError, IdlTypeError
from . import ast as A

# IDL dtype names -> pypto dtypes; IDL_NAME gives the canonical spelling back
DTYPES = {"FLOAT16": D.float16, "BFLOAT16": D.bfloat16, "FLOAT32": D.float32, "INT8": D.int8,
          "UINT8": D.uint8, "INT16": D.int16, "UINT16": D.uint16, "INT32": D.int32,
          "UINT32": D.uint32, "INT64": D.int64, "UINT64": D.uint64}
ALIASES = {"FP16": "FLOAT16", "HALF": "FLOAT16", "BF16": "BFLOAT16", "FP32": "FLOAT32",
           "FLOAT": "FLOAT32"}
IDL_NAME = {dt: name for name, dt in DTYPES.items()}

# Expression nesting allowed (the tree is walked recursively by the checker, evaluator, ...)
MAX_DEPTH = 120
_INT_LIMIT = 2 ** 63            # literals and dims must fit int64 (the evaluator's integers)
_RULE = ("an IDL file is `package a.b;` (optional) then `operator Name { input {...} output {...} "
         "computation {...} }` blocks")
_WORDS = {"NAME": "a name", "INT": "an integer", "FLOAT": "a number", "$END": "the end of the file"}


@lru_cache(maxsize=None)
def _lark() -> lark.Lark:
    text = Path(__file__).with_name("grammar.lark").read_text()
    return lark.Lark(text, parser="lalr", maybe_placeholders=False)


def dtype_of(name: str, loc: A.Loc, source: str | None = None) -> D.DType:
    """The pypto dtype of an IDL type name (IdlTypeError listing the accepted names otherwise)."""
    key = ALIASES.get(name, name)
    if key in DTYPES:
        return DTYPES[key]
    known = D.BY_NAME.get(name.lower())
    if known in IDL_NAME:
        hint, fix = "", f"write {IDL_NAME[known]}"
    elif known is not None:
        hint, fix = f" ({known.name} is not supported by the IDL yet)", "use one of them"
    else:
        hint, fix = "", "use one of them (upper case), e.g. FLOAT32"
    raise IdlTypeError(f"unknown dtype {name}{hint}", file=loc.file, line=loc.line,
                       column=loc.column, source=source,
                       rule=f"IDL dtypes are {', '.join(DTYPES)}", fix=fix)


class _Build(lark.Transformer):
    """lark tree -> ast nodes, checking what the grammar cannot say (literal ranges, cast's dtype)."""

    def __init__(self, file: str, source: str):
        super().__init__()
        self.file, self.source = file, source

    def _loc(self, tok: lark.Token) -> A.Loc:
        return A.Loc(self.file, tok.line or 1, tok.column or 1)

    def _error(self, tok: lark.Token, msg: str, rule: str, fix: str) -> IdlSyntaxError:
        return IdlSyntaxError(msg, file=self.file, line=tok.line or 1, column=tok.column or 1,
                              source=self.source, rule=rule, fix=fix)

    # -- structure ------------------------------------------------------------------------------
    def start(self, items):
        pkg = items[0] if isinstance(items[0], str) else None
        ops = tuple(i for i in items if isinstance(i, A.Operator))
        for op in ops:
            op.package = pkg
        return A.Module(pkg, ops, self.file)

    def package(self, items):
        return items[0]

    def dotted(self, items):
        return ".".join(str(t) for t in items)

    def operator(self, items):
        name, inputs, outputs, body = items
        for f in outputs:
            if isinstance(f, A.ScalarField):
                raise IdlSyntaxError(f"output {f.name} is a Scalar", file=self.file,
                                     line=f.loc.line, column=f.loc.column, source=self.source,
                                     rule="outputs are tensors; Scalar fields are inputs",
                                     fix=f"declare it Tensor<{f.name}, DTYPE [dims]>")
        if not outputs:
            raise self._error(name, f"operator {name} has no output", "an operator has at least "
                              "one output tensor", "declare it in `output { Tensor<y, ...>; }`")
        return A.Operator(str(name), tuple(inputs), tuple(outputs), tuple(body), self._loc(name),
                          source=self.source)

    def input_block(self, items):
        return items

    output_block = computation = input_block

    def tensor_field(self, items):
        name, dt, *dims = items
        return A.TensorField(str(name), dtype_of(str(dt), self._loc(dt), self.source), tuple(dims),
                             self._loc(name))

    def scalar_field(self, items):
        name, dt, *default = items
        return A.ScalarField(str(name), dtype_of(str(dt), self._loc(dt), self.source),
                             default[0] if default else None, self._loc(name))

    def dim(self, items):
        (t,) = items
        if t.type == "INT":
            n = self._number(t)
            if n < 1:
                raise self._error(t, f"dimension {t} is not positive", "a dimension is a symbol "
                                  "(M, K, ...) or a positive integer", "use a size of at least 1")
            return n
        return str(t)

    def literal(self, items):
        value = self._number(items[-1])
        return -value if len(items) == 2 else value

    def assign(self, items):
        name, value = items
        return A.Assign(str(name), value, self._loc(name))

    # -- expressions ----------------------------------------------------------------------------
    def const(self, items):
        (t,) = items
        return A.Const(self._number(t), self._loc(t))

    def name(self, items):
        (t,) = items
        return A.Name(str(t), self._loc(t))

    def call(self, items):
        name, *args = items
        if str(name) == "cast" and len(args) == 2 and isinstance(args[1], A.Name):
            return A.Call("cast", (args[0],), self._loc(name),
                          to=dtype_of(args[1].id, args[1].loc, self.source))
        return A.Call(str(name), tuple(args), self._loc(name))

    def neg(self, items):
        sign, operand = items
        return A.Unary("-", operand, self._loc(sign))

    def binop(self, items):
        lhs, sign, rhs = items
        return A.BinOp(str(sign), lhs, rhs, self._loc(sign))

    def _number(self, t: lark.Token) -> int | float:
        if t.type == "INT":
            digits = str(t).lstrip("0")
            if len(digits) > 19 or int(digits or 0) >= _INT_LIMIT:
                raise self._error(t, f"integer {t} is too large", "integers fit in 64 bits "
                                  f"(below {_INT_LIMIT})", "use a smaller value")
            return int(digits or 0)
        value = float(t)
        if not math.isfinite(value):
            raise self._error(t, f"number {t} is out of range", "floating-point literals are "
                              "finite doubles", "use a smaller exponent")
        return value


def _depth_error(tree: lark.Tree, file: str, source: str) -> IdlSyntaxError | None:
    """An error at the assignment whose expression nests deeper than MAX_DEPTH (walked without
    recursion: the checker, evaluator and formatter recurse, so the depth is bounded here)."""
    stack: list = [(tree, 1, None)]
    while stack:
        node, depth, anchor = stack.pop()
        if not isinstance(node, lark.Tree):
            continue
        if node.data == "assign":
            anchor = node.children[0]
        if depth > MAX_DEPTH:
            line, col = (anchor.line, anchor.column) if anchor is not None else (1, 1)
            return IdlSyntaxError("the expression nests too deeply", file=file, line=line,
                                  column=col, source=source,
                                  rule=f"expressions nest at most about {MAX_DEPTH} levels",
                                  fix="split it into several assignments")
        stack.extend((c, depth + 1, anchor) for c in node.children)
    return None


def _end_of_previous_token(source: str, offset: int) -> tuple[int, int] | None:
    """(line, column) just after the last token before ``offset``, where a missing ';' belongs."""
    try:
        last = None
        for last in _lark().lex(source[:offset]):
            pass
    except Exception:          # the prefix parsed once; if lexing it alone fails, keep lark's spot
        return None
    return (last.end_line, last.end_column) if last is not None and last.end_line else None


def _describe(names) -> str:
    words = set()
    for n in names or ():
        if n in _WORDS:
            words.add(_WORDS[n])
            continue
        try:
            pattern = _lark().get_terminal(n).pattern
        except KeyError:
            words.add(n)
            continue
        words.add(f"'{pattern.value}'" if pattern.type == "str" else n.lower())
    return ", ".join(sorted(words)[:10])


def _syntax(e: Exception, file: str, source: str) -> IdlSyntaxError:
    """lark's exception as an IdlSyntaxError at its line/column, saying what was expected."""
    line, col = getattr(e, "line", None), getattr(e, "column", None)
    expected = getattr(e, "expected", None) or getattr(e, "allowed", None)
    token = getattr(e, "token", None)
    if isinstance(e, lark.UnexpectedEOF) or getattr(token, "type", None) == "$END":
        what = "the file ends too early"
        line, col = _end_of_previous_token(source, len(source)) or (line, col)
    elif isinstance(e, lark.UnexpectedCharacters):
        what = f"unexpected character {getattr(e, 'char', '?')!r}"
    elif isinstance(e, lark.UnexpectedToken):
        what = f"unexpected {str(token)!r}"
        prev = _end_of_previous_token(source, token.start_pos) \
            if expected and "SEMICOLON" in expected and token.start_pos is not None else None
        # a ';' forgotten at the end of a statement: say so where it belongs
        if prev is not None and (str(token) == "}" or token.line > prev[0]):
            (line, col), what, expected = prev, f"missing ';' before {str(token)!r}", ["SEMICOLON"]
    else:
        what = f"cannot parse this ({type(e).__name__})"
    if not isinstance(line, int) or line < 1:
        line, col = 1, 1
    exp = _describe(expected)
    return IdlSyntaxError(what + (f"; expected {exp}" if exp else ""), file=file, line=line,
                          column=max(1, col or 1), source=source, rule=_RULE,
                          fix="correct the text at the caret" + (f" (write {exp})" if exp else ""))


def parse_tree(text: str | bytes, file: str = "<idl>") -> tuple[A.Module, str]:
    """(unchecked module, source text); raises IdlError subclasses only."""
    if isinstance(text, (bytes, bytearray)):
        data = bytes(text).removeprefix(b"\xef\xbb\xbf")          # a UTF-8 byte order mark
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise IdlSyntaxError(f"the file is not UTF-8 text (byte {e.start} is "
                                 f"{data[e.start]:#04x})", file=file, line=1, column=1,
                                 rule="IDL files are UTF-8 text", fix="save the file as UTF-8") from None
    if not isinstance(text, str):
        raise IdlSyntaxError(f"IDL text must be str or bytes, not {type(text).__name__}", file=file,
                             rule="parse() reads IDL text", fix="pass the file's text")
    try:
        tree = _lark().parse(text)
    except Exception as e:     # lark's UnexpectedInput family, and anything else it might raise
        raise _syntax(e, file, text) from None
    err = _depth_error(tree, file, text)
    if err is not None:
        raise err
    try:
        return _Build(file, text).transform(tree), text
    except lark.exceptions.VisitError as e:
        if isinstance(e.orig_exc, IdlError):
            raise e.orig_exc from None
        raise _syntax(e.orig_exc, file, text) from None
