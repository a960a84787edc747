"""The docs the code cites live in the repository: every `docs/<file> §N` and `docs/decisions.md#<anchor>`
reference in code, tests and configs names a file and a section that exist, and nothing cites the old
out-of-tree SPEC / ARCHITECTURE files."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SOURCES = sorted(p for d in ("ecab", "tests", "conf", "jobs") for p in (ROOT / d).rglob("*")
                 if p.suffix in (".py", ".yaml", ".md") and p.is_file())
SECTION_REF = re.compile(r"docs/(original-harness|architecture)\.md(?P<rest>[^\n]*)")
ANCHOR_REF = re.compile(r"docs/([\w-]+\.md)#([\w-]+)")
# The out-of-tree files the code used to cite (spelled in pieces so this file does not match itself).
OLD_REFERENCE = re.compile("SPEC" + r" §|" + "ARCHITECTURE" + r"(\.md| \")|\.\./shared/" + "SPEC")


def sections(name: str) -> set[str]:
    """Numbered headings of a doc: "## 8. ..." -> "8", "### 2.2 ..." -> "2.2"."""
    text = (DOCS / f"{name}.md").read_text(encoding="utf-8")
    return set(re.findall(r"^#{2,4} (\d+(?:\.\d+)?)\.? ", text, flags=re.M))


def anchors(name: str) -> set[str]:
    return set(re.findall(r'<a id="([\w-]+)"></a>', (DOCS / name).read_text(encoding="utf-8")))


def defect_items() -> set[int]:
    text = (DOCS / "original-harness.md").read_text(encoding="utf-8")
    part = text.split("## 8. ", 1)[1].split("\n## 9. ", 1)[0]
    return {int(n) for n in re.findall(r"^(\d+)\. \*\*", part, flags=re.M)}


def tools_documented() -> set[int]:
    text = (DOCS / "original-harness.md").read_text(encoding="utf-8")
    return {int(n) for n in re.findall(r"^#### Tool (\d+): ", text, flags=re.M)}


def references():
    for path in SOURCES:
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            yield path.relative_to(ROOT), lineno, line


def test_no_references_to_files_outside_the_repository():
    bad = [f"{p}:{n}: {line.strip()}" for p, n, line in references()
           if OLD_REFERENCE.search(line) and p != Path("tests/test_docs.py")]
    assert not bad, "\n".join(bad)


def test_section_references_exist():
    known = {name: sections(name) for name in ("original-harness", "architecture")}
    items, tools = defect_items(), tools_documented()
    assert items == set(range(1, 23)) and tools == set(range(1, 11))
    bad = []
    for path, lineno, line in references():
        for match in SECTION_REF.finditer(line):
            doc, rest = match.group(1), match.group("rest")
            for number in re.findall(r"§(\d+(?:\.\d+)?)", rest):
                if number not in known[doc]:
                    bad.append(f"{path}:{lineno}: docs/{doc}.md has no §{number}")
            if doc == "original-harness":
                for listed in re.findall(r"§8 items? ([\d ,\-]+)", rest):
                    for n in re.findall(r"\d+", listed):
                        if int(n) not in items:
                            bad.append(f"{path}:{lineno}: §8 has no item {n}")
                for listed in re.findall(r"§2\.2 tools? ([\d ,and]+)", rest):
                    for n in re.findall(r"\d+", listed):
                        if int(n) not in tools:
                            bad.append(f"{path}:{lineno}: §2.2 has no tool {n}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("doc", ["decisions.md", "original-harness.md", "architecture.md"])
def test_docs_exist(doc):
    assert (DOCS / doc).is_file()


def test_anchor_references_exist():
    bad = []
    for path, lineno, line in references():
        for doc, anchor in ANCHOR_REF.findall(line):
            if not (DOCS / doc).is_file() or anchor not in anchors(doc):
                bad.append(f"{path}:{lineno}: docs/{doc} has no anchor #{anchor}")
    for doc in ("original-harness.md", "architecture.md", "README.md"):
        text = (DOCS / doc if doc != "README.md" else ROOT / doc).read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\((?:docs/)?(decisions\.md)#([\w-]+)\)", text):
            if anchor not in anchors(target):
                bad.append(f"{doc}: link to {target}#{anchor} has no anchor")
    assert not bad, "\n".join(bad)
