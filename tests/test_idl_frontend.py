"""The IDL front end (pypto.idl): the tutorial's MatMul, the numpy reference against numpy code
written here, the checker's rules, located errors, the canonical text round trip, and arbitrary
or mutated input never raising anything but an IdlError."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto
from pypto import errors as E
from pypto.idl import ast as A
from pypto.idl import bind, check, evaluate, format_operator, parse, parse_file

TUTORIAL = """\
// matmul.idl
package cann.pto;

operator MatMul {
    // inputs
    input {
        Tensor<a, FLOAT32 [M, K]>;
        Tensor<b, FLOAT32 [K, N]>;
    }
    // outputs
    output {
        Tensor<c, FLOAT32 [M, N]>;
    }
    // computation (pseudo-code)
    computation {
        c = a @ b;   // matrix multiply
    }
}
"""

SOFTMAX = """operator Softmax {
    input { Tensor<x, FLOAT32 [M, N]>; }
    output { Tensor<y, FLOAT32 [M, N]>; }
    computation {
        m = rowmax(x);
        e = exp(x - m);
        y = e / rowsum(e);
    }
}"""

LAYERNORM = """operator LayerNorm {
    input { Tensor<x, FLOAT32 [M, N]>; Scalar<eps, FLOAT32> = 1e-5; }
    output { Tensor<y, FLOAT32 [M, N]>; }
    computation {
        mean = rowmean(x);
        d = x - mean;
        var = rowmean(d * d);
        y = d * rsqrt(var + eps);
    }
}"""

BIAS_RELU = """operator BiasRelu {
    input { Tensor<x, FLOAT16 [M, N]>; Tensor<bias, FLOAT16 [1, N]>; }
    output { Tensor<y, FLOAT16 [M, N]>; }
    computation { y = relu(x + bias); }
}"""

GEMM = """package ops.gemm;
operator GemmEpilogue {
    input { Tensor<a, BFLOAT16 [M, K]>; Tensor<b, BFLOAT16 [K, N]>; Tensor<bias, FLOAT32 [1, N]>; }
    output { Tensor<c, FLOAT32 [M, N]>; }
    computation { c = relu(a @ b + bias); }
}"""

INT8_MATMUL = """operator QMatMul {
    input { Tensor<a, INT8 [M, K]>; Tensor<b, INT8 [K, N]>; }
    output { Tensor<c, INT32 [M, N]>; }
    computation { c = a @ b; }
}"""

# every construct once: aliases, casts, negative defaults, nesting, block comments
KITCHEN = """/* a block
   comment */ package k.s;
operator Kitchen {
    input { Tensor<x, FP32 [M, 4]>; Tensor<w, HALF [4, 1]>; Scalar<s, FLOAT> = -2.5;
            Scalar<n, INT32> = -3; Scalar<t, FLOAT32>; }
    output { Tensor<y, FLOAT32 [M, 4]>; Tensor<z, INT16 [M, 1]>; }
    computation {
        u = -(x + s) * -x / (2 - -t) - max(x, 0.5) + min(abs(x), s);
        v = cast(x, FLOAT16) @ w;                  // [M, 1] FLOAT32
        p = (x + x) @ cast(w, FLOAT32) * 2 - x * (x @ cast(w, FP32));
        y = u - colmean(x) + rowmax(v) * 1e-3 - p;
        z = cast(cast(v, INT32) / n, INT16);
    }
}"""

EXAMPLES = [TUTORIAL, SOFTMAX, LAYERNORM, BIAS_RELU, GEMM, INT8_MATMUL, KITCHEN]


def _one(text: str, file: str = "t.idl") -> A.Operator:
    (op,) = parse(text, file).operators
    return op


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- the tutorial ---------------------------------------------------------------------------------
def test_the_tutorials_matmul_parses_and_evaluates():
    m = parse(TUTORIAL, "matmul.idl")
    assert m.package == "cann.pto" and m.file == "matmul.idl"
    (op,) = m.operators
    assert (op.name, op.package) == ("MatMul", "cann.pto")
    assert [(f.name, f.dtype, f.dims) for f in op.inputs] == \
        [("a", pypto.float32, ("M", "K")), ("b", pypto.float32, ("K", "N"))]
    assert [(f.name, f.dtype, f.dims) for f in op.outputs] == [("c", pypto.float32, ("M", "N"))]
    (stmt,) = op.body
    assert stmt.target == "c" and isinstance(stmt.value, A.BinOp) and stmt.value.op == "@"
    assert (stmt.value.dtype, stmt.value.shape) == (pypto.float32, ("M", "N"))
    assert op.env["c"] == (pypto.float32, ("M", "N"))
    assert op.field("b").dims == ("K", "N") and op.field("nope") is None
    got = evaluate(op, {"a": np.array([[1, 2], [3, 4], [5, 6]], np.float32),
                        "b": np.array([[7, 8, 9], [10, 11, 12]], np.float32)})
    assert list(got) == ["c"] and got["c"].dtype == np.float32
    np.testing.assert_array_equal(got["c"], [[27, 30, 33], [61, 68, 75], [95, 106, 117]])


def test_parse_file_names_the_path(tmp_path):
    p = tmp_path / "matmul.idl"
    p.write_bytes(TUTORIAL.replace("\n", "\r\n").encode())          # CRLF is fine too
    (op,) = parse_file(p).operators
    assert op.loc == A.Loc(str(p), 4, 10)
    missing = tmp_path / "absent.idl"
    with pytest.raises(E.IdlError) as ei:
        parse_file(missing)
    assert ei.value.file == str(missing) and ei.value.fix
    p.write_bytes(TUTORIAL.replace("c = a @ b;", "c = a @ q;").replace("\n", "\r\n").encode())
    with pytest.raises(E.IdlNameError) as ei:
        parse_file(str(p))
    assert (ei.value.file, ei.value.line, ei.value.column) == (str(p), 16, 17)
    assert "\r" not in str(ei.value)


# -- the numpy reference against numpy written here -------------------------------------------------
SHAPES = [(1, 1, 1), (3, 5, 2), (8, 16, 4), (5, 1, 7)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_softmax(m, k, n):
    x = _rng(m * 100 + k).normal(0, 4, (m, k)).astype(np.float32)
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    got = evaluate(_one(SOFTMAX), {"x": x})["y"]
    assert got.dtype == np.float32 and got.shape == (m, k)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got.sum(axis=1), 1, rtol=1e-5)


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("eps", [None, 0.25])
def test_layer_norm(m, k, n, eps):
    x = _rng(m + 7 * k).uniform(-3, 3, (m, k)).astype(np.float32)
    z = x.astype(np.float64)
    e = 1e-5 if eps is None else eps
    want = (z - z.mean(axis=1, keepdims=True)) / np.sqrt(z.var(axis=1, keepdims=True) + float(np.float32(e)))
    values = {"x": x} if eps is None else {"x": x, "eps": eps}
    got = evaluate(_one(LAYERNORM), values)["y"]
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_bias_relu(m, k, n):
    x = _rng(k).normal(0, 2, (m, n)).astype(np.float16)
    bias = _rng(n).normal(0, 2, (1, n)).astype(np.float16)
    want = np.maximum(x.astype(np.float64) + bias.astype(np.float64), 0).astype(np.float16)
    got = evaluate(_one(BIAS_RELU), {"x": x, "bias": bias})["y"]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_gemm_epilogue_bf16(m, k, n):
    import ml_dtypes
    a = _rng(1 + m).normal(0, 1, (m, k)).astype(ml_dtypes.bfloat16)
    b = _rng(2 + k).normal(0, 1, (k, n)).astype(ml_dtypes.bfloat16)
    bias = _rng(3 + n).normal(0, 1, (1, n)).astype(np.float32)
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0).astype(np.float32)
    op = _one(GEMM)
    assert op.package == "ops.gemm" and op.body[0].value.args[0].lhs.dtype is pypto.float32   # a @ b
    got = evaluate(op, {"a": a, "b": b, "bias": bias})["c"]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert (got >= 0).all()


@pytest.mark.parametrize("m,k,n", SHAPES + [(2, 300, 3)])
def test_int8_matmul_gives_int32(m, k, n):
    a = _rng(m).integers(-128, 128, (m, k)).astype(np.int8)
    b = _rng(n).integers(-128, 128, (k, n)).astype(np.int8)
    a[0, :] = -128                                        # the extreme products
    b[:, 0] = -128
    want = np.array([[sum(int(a[i, p]) * int(b[p, j]) for p in range(k)) for j in range(n)]
                     for i in range(m)], np.int64).astype(np.int32)
    op = _one(INT8_MATMUL)
    assert op.body[0].value.dtype is pypto.int32
    got = evaluate(op, {"a": a, "b": b})["c"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_inputs_are_rounded_to_their_declared_dtype():
    op = _one(BIAS_RELU)
    x = np.array([[1 + 2.0 ** -12]], np.float64)         # not a float16 value: rounds to 1
    got = evaluate(op, {"x": x, "bias": np.zeros((1, 1))})["y"]
    np.testing.assert_array_equal(got, [[1.0]])


def test_integer_division_truncates_toward_zero():
    text = """operator D { input { Tensor<a, INT32 [N]>; Tensor<b, INT32 [N]>; }
output { Tensor<c, INT32 [N]>; }
computation { c = a / b; } }"""
    op = _one(text)
    a, b = [7, -7, 7, -7, 0, 5], [2, 2, -2, -2, 3, 9]
    got = evaluate(op, {"a": np.array(a), "b": np.array(b)})["c"]
    np.testing.assert_array_equal(got, [int(x / y) for x, y in zip(a, b)])   # C, not floor
    with pytest.raises(E.IdlError) as ei:
        evaluate(op, {"a": np.array([1, 2]), "b": np.array([3, 0])})
    assert "division by zero" in str(ei.value) and "a / b" in str(ei.value)
    assert (ei.value.line, ei.value.column) == (3, 21)                   # the '/'


def test_integer_results_wrap_to_the_output_dtype():
    text = """operator W { input { Tensor<a, INT16 [N]>; Scalar<k, INT16> = 3; }
output { Tensor<c, INT16 [N]>; Tensor<u, UINT8 [N]>; }
computation { c = a * 1000 + k; u = cast(a, UINT8) - 1; } }"""
    op = _one(text)
    a = np.array([100, -100, 0], np.int16)
    got = evaluate(op, {"a": a})
    want_c = [((v * 1000 + 3 + 2 ** 15) % 2 ** 16) - 2 ** 15 for v in (100, -100, 0)]
    np.testing.assert_array_equal(got["c"], want_c)
    np.testing.assert_array_equal(got["u"], [99, 155, 255])               # 156 - 1; 0 - 1 wraps


def test_scalars_defaults_and_missing_values():
    text = """operator S { input { Tensor<x, FLOAT32 [N]>; Scalar<s, FLOAT32> = 0.5; Scalar<t, INT8>; }
output { Tensor<y, FLOAT32 [N]>; }
computation { y = x * s + t; } }"""
    op = _one(text)
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(evaluate(op, {"x": x, "t": 1})["y"], [1.5, 2.0])
    np.testing.assert_array_equal(evaluate(op, {"x": x, "t": 2, "s": 3})["y"], [5.0, 8.0])
    with pytest.raises(E.IdlError, match="t has no value"):
        evaluate(op, {"x": x})
    with pytest.raises(E.IdlTypeError):
        evaluate(op, {"x": x, "t": 1.5})                                   # INT8 wants an integer
    with pytest.raises(E.IdlNameError, match="X is not an input"):
        evaluate(op, {"x": x, "t": 1, "X": x})


def test_bind_uses_inputs_and_outputs():
    op = _one(TUTORIAL)
    assert bind(op, {"a": (3, 2), "c": (3, 4)}) == {"M": 3, "K": 2, "N": 4}
    with pytest.raises(E.IdlShapeError) as ei:
        bind(op, {"a": (3, 2), "b": (2, 5), "c": (3, 4)})
    assert all(w in str(ei.value) for w in ("symbol N", "5", "4", " b ", " c"))
    fixed = _one(BIAS_RELU)
    with pytest.raises(E.IdlShapeError, match="2 is not 1"):
        bind(fixed, {"bias": (2, 4)})


# -- the checker's rules --------------------------------------------------------------------------------
def _computation(body: str, inputs: str, outputs: str = "Tensor<y, FLOAT32 [M, N]>;") -> str:
    return f"operator T {{ input {{ {inputs} }} output {{ {outputs} }} computation {{ {body} }} }}"


def test_precedence_and_associativity():
    op = _one(_computation("y = a @ b + c * d - e - f;", "Tensor<a, FLOAT32 [M, K]>; "
                           "Tensor<b, FLOAT32 [K, N]>; Tensor<c, FLOAT32 [M, N]>; "
                           "Tensor<d, FLOAT32 [M, N]>; Tensor<e, FLOAT32 [M, N]>; Tensor<f, FLOAT32 [M, N]>;"))

    def tree(e):
        if isinstance(e, A.Name):
            return e.id
        return (e.op, tree(e.lhs), tree(e.rhs))
    assert tree(op.body[0].value) == ("-", ("-", ("+", ("@", "a", "b"), ("*", "c", "d")), "e"), "f")
    op = _one(_computation("y = -x * x @ w;", "Tensor<x, FLOAT32 [M, M]>; Tensor<w, FLOAT32 [M, N]>;"))
    v = op.body[0].value                                     # ((-x) * x) @ w: left to right
    assert v.op == "@" and v.lhs.op == "*" and isinstance(v.lhs.lhs, A.Unary)


def test_shapes_broadcast_and_reduce():
    op = _one(_computation(
        "r = rowsum(x); c = colmax(x); s = x - r; t = s * c; u = t + eps; q = r * c; y = u + q;",
        "Tensor<x, FLOAT32 [M, N]>; Scalar<eps, FLOAT32> = 1.0;"))
    env = op.env
    assert env["r"] == (pypto.float32, ("M", 1)) and env["c"] == (pypto.float32, (1, "N"))
    assert env["s"][1] == env["t"][1] == env["u"][1] == env["q"][1] == ("M", "N")
    assert env["eps"] == (pypto.float32, ())
    with pytest.raises(E.IdlShapeError, match="do not broadcast"):
        parse(_computation("y = x + z;", "Tensor<x, FLOAT32 [M, N]>; Tensor<z, FLOAT32 [K, N]>;"))
    with pytest.raises(E.IdlShapeError, match="2-D"):
        parse(_computation("y = rowsum(v);", "Tensor<v, FLOAT32 [M]>;"))
    # N-D elementwise is fine
    op = _one(_computation("y = exp(v) * w;", "Tensor<v, FLOAT32 [B, M, N]>; Tensor<w, FLOAT32 [N]>;",
                           "Tensor<y, FLOAT32 [B, M, N]>;"))
    assert op.body[0].value.shape == ("B", "M", "N")


def test_dtype_rules():
    op = _one(_computation("t = 1 + 2; f = 1 + 2.5; y = x * 2 + t * f;", "Tensor<x, FLOAT16 [M, N]>;",
                           "Tensor<y, FLOAT16 [M, N]>;"))
    assert op.env["t"][0] is pypto.int32 and op.env["f"][0] is pypto.float32
    assert op.env["y"][0] is pypto.float16                # constants take the tensor's dtype
    op = _one(_computation("y = cast(x, BF16);", "Tensor<x, INT32 [M, N]>;", "Tensor<y, BFLOAT16 [M, N]>;"))
    assert op.body[0].value.dtype is pypto.bfloat16 and op.body[0].value.to is pypto.bfloat16
    assert "cast(x, BFLOAT16)" in format_operator(op)        # the canonical name
    for body, inputs, words in [
        ("y = a @ b;", "Tensor<a, INT16 [M, K]>; Tensor<b, INT16 [K, N]>;", "FLOAT16, BFLOAT16, FLOAT32"),
        ("y = exp(x);", "Tensor<x, INT32 [M, N]>;", "exp() of INT32"),
        ("y = rowmean(x);", "Tensor<x, INT32 [M, N]>;", "rowmean() of INT32"),
        ("y = x * 0.5;", "Tensor<x, INT32 [M, N]>;", "float 0.5"),
        ("y = a * b;", "Tensor<a, FLOAT32 [M, N]>; Tensor<b, BFLOAT16 [M, N]>;", "FLOAT32 and BFLOAT16"),
        ("y = a @ b;", "Tensor<a, FLOAT16 [M, K]>; Tensor<b, FLOAT32 [K, N]>;", "FLOAT16 and FLOAT32"),
    ]:
        with pytest.raises(E.IdlTypeError, match=re.escape(words)) as ei:
            parse(_computation(body, inputs, "Tensor<y, INT32 [M, N]>;"))
        assert ei.value.rule and ei.value.fix


def test_check_is_idempotent():
    op = _one(KITCHEN)
    before = format_operator(op)
    env = dict(op.env)
    assert check(op) is op and op.env == env and format_operator(op) == before


def test_kitchen_sink_evaluates_like_numpy():
    op = _one(KITCHEN)
    x = _rng(5).uniform(-2, 2, (3, 4)).astype(np.float32)
    w = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float16)
    t = 1.25
    got = evaluate(op, {"x": x, "w": w, "t": t})
    z = x.astype(np.float64)
    u = -(z - 2.5) * -z / (2 + t) - np.maximum(z, 0.5) + np.minimum(np.abs(z), -2.5)
    v = z.astype(np.float16).astype(np.float64) @ w.astype(np.float64)
    w64 = w.astype(np.float64)
    p = (z + z) @ w64 * 2 - z * (z @ w64)
    y = u - z.mean(axis=0, keepdims=True) + v.max(axis=1, keepdims=True) * 1e-3 - p
    zz = np.array([int(q / -3) for q in np.trunc(v).astype(np.int64).ravel()]).reshape(v.shape)
    np.testing.assert_allclose(got["y"], y.astype(np.float32), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["z"], zz.astype(np.int16))


# -- located errors -------------------------------------------------------------------------------------
MATMUL_LINES = TUTORIAL.split("\n")


def _tutorial(old: str, new: str) -> str:
    assert old in TUTORIAL
    return TUTORIAL.replace(old, new, 1)


def _at(text: str, line: int, needle: str, nth: int = 0) -> tuple[int, int]:
    """(line, column) of the nth occurrence of needle on that line, counted from the text."""
    row = text.split("\n")[line - 1]
    col = -1
    for _ in range(nth + 1):
        col = row.index(needle, col + 1)
    return line, col + 1


F16 = ("FLOAT32 [M, K]>;\n        Tensor<b, FLOAT32 [K, N]>;",
       "FLOAT16 [M, K]>;\n        Tensor<b, FLOAT16 [K, N]>;")

# (text, error class, (line, column), words in the message)
ERRORS = [
    # a missing ';' is reported right after the statement
    (_tutorial("c = a @ b;", "c = a @ b"), E.IdlSyntaxError, (16, 18), "';'"),
    (_tutorial("Tensor<a, FLOAT32", "Tensor<a, FLOAT33"), E.IdlTypeError, (7, 19), "unknown dtype FLOAT33"),
    (_tutorial("Tensor<a, FLOAT32", "Tensor<a, FLOAT8_E4M3"), E.IdlTypeError, (7, 19), "not supported"),
    (_tutorial("c = a @ b;", "c = gelu(a) @ b;"), E.IdlFunctionError, (16, 13), "unknown function gelu"),
    (_tutorial("c = a @ b;", "c = a @ bb;"), E.IdlNameError, (16, 17), "bb is not defined"),
    (_tutorial("c = a @ b;", "c = a @ a;"), E.IdlShapeError, (16, 15), "inner dims K and M differ"),
    (_tutorial("c = a @ b;", "c = a @ b + h;").replace("FLOAT32 [K, N]>;", "FLOAT32 [K, N]>; Tensor<h, FLOAT16 [M, N]>;"),
     E.IdlTypeError, (16, 19), "FLOAT32 and FLOAT16"),
    (_tutorial("c = a @ b;", "c = a @ b; c = a @ b;"), E.IdlNameError, (16, 20), "c is assigned twice"),
    (_tutorial("c = a @ b;", "t = a @ b;"), E.IdlNameError, (12, 16), "output c is never assigned"),
    (_tutorial(*F16).replace("Tensor<c, FLOAT32", "Tensor<c, FLOAT16"), E.IdlTypeError, (16, 9),
     "cast(a @ b, FLOAT16)"),
    (_tutorial("c = a @ b;", "a = b; c = a @ b;"), E.IdlNameError, (16, 9), "a is an input"),
    (_tutorial("c = a @ b;", "c = exp(a, b);"), E.IdlFunctionError, (16, 13), "takes 1 argument"),
    (_tutorial("[M, N]>;\n    }", "[N, M]>;\n    }"), E.IdlShapeError, (16, 9), "declared [N, M]"),
    (_tutorial("Tensor<c, FLOAT32 [M, N]>;", "Scalar<c, FLOAT32>;"), E.IdlSyntaxError, (12, 16), "Scalar"),
    (_tutorial("[K, N]", "[K, 0]"), E.IdlSyntaxError, (8, 31), "not positive"),
    (_tutorial("@", "#"), E.IdlSyntaxError, (16, 15), "unexpected character '#'"),
    (_tutorial("    }\n}", "    }\n"), E.IdlSyntaxError, (17, 6), "ends too early"),
    (_tutorial("package cann.pto;", "package cann.pto; package x;"), E.IdlSyntaxError, (2, 19), "'operator'"),
    (TUTORIAL + TUTORIAL.split("package cann.pto;")[1], E.IdlNameError, (21, 10), "MatMul is defined twice"),
]


@pytest.mark.parametrize("text,cls,where,words", ERRORS, ids=[e[3] for e in ERRORS])
def test_errors_are_located(text, cls, where, words):
    with pytest.raises(cls) as ei:
        parse(text, "matmul.idl")
    e = ei.value
    assert (e.file, e.line, e.column) == ("matmul.idl", *where), str(e)
    assert words in str(e), str(e)
    assert e.rule and e.fix
    msg = str(e).split("\n")
    assert msg[0].startswith(f"matmul.idl:{where[0]}:{where[1]}: ")
    src = text.split("\n")[where[0] - 1]
    assert msg[1] == "    " + src and msg[2] == "    " + " " * (where[1] - 1) + "^"


def test_error_positions_match_the_text():
    """The table's columns, recomputed from the text instead of typed in."""
    assert _at(ERRORS[0][0], 16, "b", 0)[1] + 1 == 18
    assert _at(TUTORIAL, 16, "@") == (16, 15) and _at(TUTORIAL, 12, "c") == (12, 16)
    assert _at(TUTORIAL, 7, "FLOAT32") == (7, 19) and _at(TUTORIAL, 4, "MatMul") == (4, 10)
    assert _at(_tutorial("[K, N]", "[K, 0]"), 8, "0") == (8, 31)
    assert _at(TUTORIAL + TUTORIAL.split("package cann.pto;")[1], 21, "MatMul") == (21, 10)
    assert _at(TUTORIAL, 16, "c") == (16, 9) and _at(TUTORIAL, 17, "}") == (17, 5)


def test_bad_bytes_and_types_are_syntax_errors():
    with pytest.raises(E.IdlSyntaxError) as ei:
        parse(b"operator \xff\xfe", "x.idl")
    assert (ei.value.line, ei.value.column) == (1, 1) and "UTF-8" in str(ei.value)
    assert parse(("\ufeff" + TUTORIAL).encode()).package == "cann.pto"      # a BOM is skipped
    with pytest.raises(E.IdlSyntaxError):
        parse(12)
    with pytest.raises(E.IdlSyntaxError, match="nests too deeply"):
        parse(_tutorial("c = a @ b;", "c = " + "-" * 5000 + "(a @ b);"))
    with pytest.raises(E.IdlSyntaxError, match="too large"):
        parse(_tutorial("c = a @ b;", "c = a @ b * 1" + "0" * 5000 + ";"))


def test_inconsistent_symbols_at_evaluation():
    op = _one(TUTORIAL, "matmul.idl")
    with pytest.raises(E.IdlShapeError) as ei:
        evaluate(op, {"a": np.ones((3, 2), np.float32), "b": np.ones((4, 3), np.float32)})
    e = ei.value
    assert "symbol K is 2 in a but 4 in b" in str(e)
    assert (e.file, e.line, e.column) == ("matmul.idl", *_at(TUTORIAL, 8, "b"))
    assert "Tensor<b, FLOAT32 [K, N]>;" in str(e)                      # the excerpt
    with pytest.raises(E.IdlShapeError, match="2-D"):
        evaluate(op, {"a": np.ones((3,), np.float32), "b": np.ones((3, 3), np.float32)})


# -- canonical text ---------------------------------------------------------------------------------------
def _tree(op: A.Operator):
    """Everything of an operator but locations, as comparable tuples."""
    def ex(e):
        if isinstance(e, A.Name):
            return ("name", e.id, e.dtype, e.shape)
        if isinstance(e, A.Const):
            return ("const", type(e.value), e.value, e.dtype)
        if isinstance(e, A.Unary):
            return ("neg", ex(e.operand), e.dtype, e.shape)
        if isinstance(e, A.BinOp):
            return (e.op, ex(e.lhs), ex(e.rhs), e.dtype, e.shape)
        return ("call", e.func, e.to, tuple(ex(a) for a in e.args), e.dtype, e.shape)
    fields = [(type(f).__name__, f.name, f.dtype, getattr(f, "dims", None), getattr(f, "default", None))
              for f in op.inputs + op.outputs]
    return (op.name, op.package, fields, len(op.inputs),
            [(s.target, ex(s.value)) for s in op.body], op.env)


@pytest.mark.parametrize("text", EXAMPLES, ids=lambda t: re.search(r"operator (\w+)", t).group(1))
def test_canonical_text_round_trips(text):
    op = _one(text)
    canon = format_operator(op)
    again = _one(canon)
    assert _tree(again) == _tree(op)
    assert format_operator(again) == canon
    assert ("package " in canon) == (op.package is not None)


def test_canonical_text_of_the_tutorial():
    assert format_operator(_one(TUTORIAL)) == (
        "package cann.pto;\n\noperator MatMul {\n    input {\n        Tensor<a, FLOAT32 [M, K]>;\n"
        "        Tensor<b, FLOAT32 [K, N]>;\n    }\n    output {\n        Tensor<c, FLOAT32 [M, N]>;\n"
        "    }\n    computation {\n        c = a @ b;\n    }\n}\n")


# -- nothing but IdlError, whatever the input --------------------------------------------------------------
def _parse_or_idl_error(data):
    try:
        return parse(data, "fuzz.idl")
    except E.IdlError as e:
        assert e.line >= 1 and e.column >= 1
        return None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes(data):
    _parse_or_idl_error(data)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text(data):
    _parse_or_idl_error(data)


TOKEN = re.compile(r"\s+|//[^\n]*|/\*.*?\*/|[A-Za-z_][A-Za-z_0-9]*|[0-9.]+(?:[eE][+-]?[0-9]+)?|.", re.S)
PIECES = ["", ";", "{", "}", "@", "(", ")", "-", "+", "/", "*", "=", ",", "[", "]", "<", ">", "/*", "//",
          "\n", "FLOAT16", "INT8", "x", "a", "c", "M", "1", "0", "1e400", "0.5", "exp", "cast", "rowsum",
          "Tensor", "Scalar", "input", "output", "computation", "operator", "package", "\xff", "é"]


@st.composite
def mutants(draw):
    text = draw(st.sampled_from(EXAMPLES))
    for _ in range(draw(st.integers(1, 4))):
        by_token = draw(st.booleans())
        parts = TOKEN.findall(text) if by_token else list(text)
        i = draw(st.integers(0, len(parts)))
        what = draw(st.sampled_from(["delete", "insert", "replace"]))
        piece = draw(st.sampled_from(PIECES + ([] if by_token else list("abc;{}()0.-@"))))
        if what == "insert":
            parts.insert(i, piece)
        elif i < len(parts):
            parts[i] = piece if what == "replace" else ""
        text = "".join(parts)
    return text


@settings(max_examples=200, deadline=None)
@given(mutants())
def test_mutated_examples(text):
    m = _parse_or_idl_error(text)
    if m is None:
        return
    for op in m.operators:              # what parses also formats, re-parses and evaluates
        canon = format_operator(op)
        assert _tree(_one(canon)) == _tree(op)
        sizes, values = {}, {}
        for f in op.inputs:
            if isinstance(f, A.TensorField):
                shape = tuple(d if isinstance(d, int) else sizes.setdefault(d, 2 + len(sizes) % 2)
                              for d in f.dims)
                values[f.name] = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) % 5 + 1
            elif f.default is None:
                values[f.name] = 2
        try:
            out = evaluate(op, values)
        except E.IdlError:
            continue
        assert set(out) == {f.name for f in op.outputs}
