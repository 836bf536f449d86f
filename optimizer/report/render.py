"""HTML and Markdown of the report's sections (the page and its style are templates in
``optimizer/report/templates/``); every text from an input file is escaped.
"""

from __future__ import annotations

import base64
import html
import string
from importlib import resources


def _template(name: str) -> str:
    """A file of ``optimizer/report/templates/`` (package data)."""
    return (resources.files("optimizer.report") / "templates" / name).read_text(encoding="utf-8")


def render_html(title: str, secs: list[dict], figs: dict[str, bytes]) -> str:
    e = html.escape
    out: list[str] = []

    def table(spec):
        head, rows = spec
        t = ["<table>", "<tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"]
        t += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows]
        t.append("</table>")
        return "\n".join(t)

    for s in secs:
        out.append(f'<section id="{e(s["id"])}">')
        out.append(f"<h2>{e(s['title'])}</h2>")
        for _i, p in enumerate(s.get("paras", [])):
            cls = ' class="lead"' if s["id"] == "summary" else ""
            out.append(f"<p{cls}>{e(p)}</p>")
        if "table" in s:
            out.append(table(s["table"]))
        out.extend(f"<p>{e(p)}</p>" for p in s.get("after", []))
        for name, cap in s.get("figures", []):
            if name in figs:
                b64 = base64.b64encode(figs[name]).decode("ascii")
                out.append(
                    f'<figure><img alt="{e(cap)}" src="data:image/png;base64,{b64}">'
                    f"<figcaption>{e(cap)}</figcaption></figure>"
                )
        for caption, spec in s.get("more_tables", []):
            out.append(f"<details open><summary>{e(caption)}</summary>")
            out.append(table(spec))
            out.append("</details>")
        out.append("</section>")
    page = string.Template(_template("page.html"))
    return page.substitute(title=e(title), css=_template("style.css").strip(), body="\n".join(out))


#: Markdown/HTML metacharacters escaped in report.md (names and text come from input files: a query
#: named "<script>…" or "[x](javascript:…)" must read as text, as the HTML report shows it)
_MD_ESCAPES = {"\\": "\\\\", "<": "\\<", ">": "\\>", "[": "\\[", "]": "\\]", "&": "\\&", "|": "\\|"}


def _md(text) -> str:
    """``text`` as literal Markdown text: one line, HTML and link syntax backslash-escaped."""
    flat = str(text).replace("\r", " ").replace("\n", " ")
    return "".join(_MD_ESCAPES.get(ch, ch) for ch in flat)


def render_markdown(title: str, secs: list[dict], figs: dict[str, bytes]) -> str:
    def cell(c):
        return _md(c)

    def table(spec):
        head, rows = spec
        t = ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "---|" * len(head)]
        t += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
        return "\n".join(t)

    out = [f"# {_md(title)}", ""]
    for s in secs:
        out += [f"## {_md(s['title'])}", ""]
        for p in s.get("paras", []):
            out += [_md(p), ""]
        if "table" in s:
            out += [table(s["table"]), ""]
        for p in s.get("after", []):
            out += [_md(p), ""]
        for name, cap in s.get("figures", []):
            if name in figs:
                out += [f"![{_md(cap)}]({name})", ""]
        for caption, spec in s.get("more_tables", []):
            out += [f"{_md(caption)}:", "", table(spec), ""]
    return "\n".join(out).rstrip("\n") + "\n"
