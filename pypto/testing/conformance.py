"""``pypto conformance``: run the conformance suite on one backend and SoC (or one shard of it) and
write reports: ``results.json`` (every case), ``report.md`` and a self-contained ``report.html``
(instruction x dtype x backend: passed, failed, skipped, documented deviations, the first error
of each failure) and ``junit.xml`` for CI systems. ``pypto conformance merge`` joins the parts
that several machines ran (``--shard K/N`` splits the suite by a hash of each case's id, so the
parts never overlap and together cover it).

The suite is the repository's ``conformance/`` folder; the command runs from a pypto checkout.
"""
from __future__ import annotations

import argparse
import html
import json
import re
import sys
import zlib
from collections import defaultdict
from pathlib import Path

import pypto

SUITE = Path(pypto.__file__).resolve().parents[1] / "conformance"
BACKENDS = ("sim", "npu", "npu-cpusim")
_DTYPES = ("f32", "f16", "bf16", "f64", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64",
           "e4m3", "e5m2", "hif8", "e8m0", "e2m1", "e1m2")


class Collector:
    """A pytest plugin object: deselects other SoCs and other shards, and keeps every result."""

    def __init__(self, soc: str | None, shard: tuple[int, int] | None):
        self.soc, self.shard = soc, shard
        self.results: list[dict] = []

    def pytest_collection_modifyitems(self, config, items) -> None:
        keep, drop = [], []
        for item in items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            other_soc = self.soc and params.get("soc", self.soc) != self.soc
            other_shard = self.shard and zlib.crc32(item.nodeid.encode()) % self.shard[1] != self.shard[0] - 1
            (drop if other_soc or other_shard else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def pytest_runtest_logreport(self, report) -> None:
        if report.when != "call" and report.outcome == "passed":
            return
        if report.when == "teardown" and report.outcome == "passed":
            return
        outcome = report.outcome
        message = ""
        if hasattr(report, "wasxfail"):
            outcome, message = ("xfailed" if report.skipped else "xpassed"), report.wasxfail
        elif report.failed:
            message = _first_error(str(report.longrepr))
        elif report.skipped:
            message = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
        self.results.append({"nodeid": report.nodeid, "outcome": outcome, "when": report.when,
                             "duration": round(report.duration, 4), "message": message})


def _first_error(text: str) -> str:
    lines = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
    return " ".join(lines[:3])[:400] if lines else text.strip().splitlines()[-1][:400] if text.strip() else ""


def _key(nodeid: str) -> tuple[str, str, str]:
    """(instruction or test, dtype, backend) of a case, from its id."""
    test = nodeid.split("::")[-1]
    name, _, params = test.partition("[")
    toks = params.rstrip("]").split("-") if params else []
    instr = next((t for t in toks if re.fullmatch(r"T[A-Z0-9_]+", t)), name)
    dtype = next((t for t in toks if t in _DTYPES), "")
    backend = next((b for b in ("npu-cpusim", "sim-compiled", "sim-eager") if b in params),
                   "npu" if toks[:1] == ["npu"] else "")
    return instr, dtype, backend


def summarise(results: list[dict]) -> list[dict]:
    rows: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))
    for r in results:
        k = _key(r["nodeid"])
        row = rows[k]
        row[r["outcome"]] += 1
        if r["outcome"] in ("failed", "xfailed") and "first" not in row:
            row["first"] = f"{r['nodeid'].split('::')[-1]}: {r['message']}"
    return [{"instruction": k[0], "dtype": k[1], "backend": k[2], **dict(v)} for k, v in sorted(rows.items())]


_COLS = ("passed", "failed", "skipped", "xfailed", "xpassed")


def markdown(rows: list[dict], meta: dict) -> str:
    total = defaultdict(int)
    for r in rows:
        for c in _COLS:
            total[c] += r.get(c, 0)
    out = [f"# pypto conformance: {meta.get('backend')} / {meta.get('soc') or 'every SoC'}", "",
           f"pypto {meta.get('pypto')}; shards {', '.join(meta.get('shards', [])) or 'all'}; "
           + ", ".join(f"{total[c]} {c}" for c in _COLS), "",
           "| instruction | dtype | backend | " + " | ".join(_COLS) + " | first failure or deviation |",
           "|---|---|---|" + "---|" * len(_COLS) + "---|"]
    for r in rows:
        out.append(f"| {r['instruction']} | {r['dtype']} | {r['backend']} | "
                   + " | ".join(str(r.get(c, 0)) for c in _COLS)
                   + f" | {r.get('first', '').replace('|', '/')} |")
    return "\n".join(out) + "\n"


def page(rows: list[dict], meta: dict) -> str:
    head = "".join(f"<th>{c}</th>" for c in ("instruction", "dtype", "backend", *_COLS, "first failure or deviation"))
    body = []
    for r in rows:
        cls = "fail" if r.get("failed") or r.get("xpassed") else "dev" if r.get("xfailed") else "pass"
        cells = [r["instruction"], r["dtype"], r["backend"], *[str(r.get(c, 0)) for c in _COLS], r.get("first", "")]
        body.append(f'<tr class="{cls}">' + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    title = html.escape(f"pypto conformance: {meta.get('backend')} / {meta.get('soc') or 'every SoC'}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }}
th {{ background: #eee; position: sticky; top: 0; }}
tr.pass td {{ background: #eefbee; }} tr.fail td {{ background: #fde8e8; }} tr.dev td {{ background: #fff6dd; }}
</style></head><body>
<h1>{title}</h1>
<p>pypto {html.escape(str(meta.get('pypto')))}; shards {html.escape(', '.join(meta.get('shards', [])) or 'all')}.
Green: every case passed; red: a case failed (or a documented deviation no longer shows); yellow:
a documented deviation of the backend from the NPU (docs/fidelity.md).</p>
<table><thead><tr>{head}</tr></thead><tbody>
{chr(10).join(body)}
</tbody></table></body></html>
"""


def write_reports(out: Path, results: list[dict], meta: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    rows = summarise(results)
    (out / "report.md").write_text(markdown(rows, meta))
    (out / "report.html").write_text(page(rows, meta))


def _shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)/(\d+)", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise argparse.ArgumentTypeError(f"--shard {text}: write K/N with 1 <= K <= N, e.g. 2/4")
    return int(m.group(1)), int(m.group(2))


def main(argv: list[str], prog: str = "pypto conformance") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    m = sub.add_parser("merge", help="join the reports of several shards into one")
    m.add_argument("parts", nargs="+")
    m.add_argument("--out", required=True)
    ap.add_argument("--backend", choices=BACKENDS, default="sim")
    ap.add_argument("--soc", choices=("a2a3", "a5"))
    ap.add_argument("--shard", type=_shard, help="run part K of N (K/N)")
    ap.add_argument("--out", default="conformance-report")
    ap.add_argument("-k", dest="keyword", help="only cases matching this pytest -k expression")
    ap.add_argument("--files", nargs="+", help="only these files of the suite (default: all of it)")
    ns, rest = ap.parse_known_args(argv)
    if ns.cmd == "merge":
        return _merge([Path(p) for p in ns.parts], Path(ns.out))
    if not SUITE.is_dir():
        print(f"{prog}: the conformance suite is not here ({SUITE}); run from a pypto checkout",
              file=sys.stderr)
        return 2
    import pytest
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    col = Collector(ns.soc, ns.shard)
    where = [str(SUITE / f) for f in ns.files] if ns.files else [str(SUITE)]
    args = [*where, "-q", "-p", "no:cacheprovider", f"--backend={ns.backend}",
            f"--junitxml={out / 'junit.xml'}", *(["-k", ns.keyword] if ns.keyword else []), *rest]
    code = pytest.main(args, plugins=[col])
    meta = {"backend": ns.backend, "soc": ns.soc, "pypto": pypto.__version__,
            "shards": [f"{ns.shard[0]}/{ns.shard[1]}"] if ns.shard else []}
    write_reports(out, col.results, meta)
    print(f"reports: {out / 'report.md'}, {out / 'report.html'}, {out / 'junit.xml'}")
    return int(code)


def _merge(parts: list[Path], out: Path) -> int:
    results, metas = [], []
    for p in parts:
        data = json.loads((p / "results.json").read_text())
        results += data["results"]
        metas.append(data["meta"])
    meta = dict(metas[0])
    meta["shards"] = sorted(s for m in metas for s in m.get("shards", []))
    write_reports(out, results, meta)
    suites = []
    for p in parts:
        text = (p / "junit.xml").read_text() if (p / "junit.xml").exists() else ""
        suites += re.findall(r"<testsuite\b.*?</testsuite>", text, flags=re.S)
    (out / "junit.xml").write_text('<?xml version="1.0" encoding="utf-8"?>\n<testsuites>'
                                   + "".join(suites) + "</testsuites>\n")
    failed = sum(r["outcome"] in ("failed", "xpassed") for r in results)
    print(f"merged {len(parts)} parts: {len(results)} results, {failed} failed; reports in {out}")
    return 1 if failed else 0
