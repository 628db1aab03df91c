#!/usr/bin/env python3
"""Every citation of a document section and every link between the markdown files resolves.

A citation is `FILE.md, "Heading"` (or `*Heading*`), or `README, "Heading"`, in any source,
script, deck or document of the repository; a comment may wrap it over two lines. It
resolves when FILE (from the repository root, or beside the citing file) exists and has a
heading whose title is the cited one, or starts with it followed by ':' or ' (' (a heading
`Title: detail` may be cited as `Title`). A citation that is a link's text is checked as
the link. A relative markdown link `[text](path#anchor)`
resolves when the path exists and, if an anchor is given, the target has a heading with
that GitHub anchor. Prints each broken one with where it is, and 'citations ok' when none.

  check_doc_citations.py REPO_ROOT"""
import bisect
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE_EXT = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".py", ".sh", ".cmake", ".txt", ".yaml", ".md", ".sbatch",
              ".pbs", ".json")
SKIP_DIRS = {".git", "outputs/figures"}
CITATION = re.compile(r'((?:[\w.-]+/)*[\w.-]+\.md|\bREADME),\s+(?:"([^"\n]{1,120})"|\*([^*\n]{1,120})\*)')
LINK = re.compile(r'(?<!\\)\[[^\]\n]*\]\(([^()\s]+)\)')
# A wrapped comment's next line starts with its marker, which the citation does not contain.
COMMENT_MARKER = re.compile(r"^[ \t]*(?://+|#+ |\*(?!\*))?[ \t]*")


def source_files():
    for top, dirs, files in os.walk(ROOT):
        rel_top = os.path.relpath(top, ROOT)
        dirs[:] = sorted(d for d in dirs if not d.startswith(("build", ".")) and d != "shared"
                         and os.path.normpath(os.path.join(rel_top, d)) not in SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(SOURCE_EXT) or rel_top in ("ci", ".ci", "jobs", "tools"):
                yield os.path.join(top, name)
    for name in (".ci/run",):
        if os.path.isfile(os.path.join(ROOT, name)):
            yield os.path.join(ROOT, name)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def headings(path, cache={}):
    """Titles of a markdown file's headings (outside code fences), markup removed."""
    if path not in cache:
        titles, fenced = [], False
        for line in read(path).splitlines():
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"#{1,6} ", line):
                titles.append(re.sub(r"[`*]", "", line.lstrip("#").strip()))
        cache[path] = titles
    return cache[path]


def anchor(title):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def candidates(target, citing):
    if target == "README":
        target = "README.md"
    found = []
    for base in (ROOT, os.path.dirname(citing)):
        path = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(path) and path not in found:
            found.append(path)
    return found


def cites(title, cited):
    cited = re.sub(r"\s+", " ", cited.replace("`", "")).strip()
    return title == cited or title.startswith((cited + ":", cited + " ("))


def check_citations(path, text, problems):
    # Join the lines, each without its comment marker, so a wrapped citation reads as one.
    pieces, starts, at = [], [], 0
    for line in text.splitlines():
        piece = COMMENT_MARKER.sub("", line) if pieces else line
        starts.append(at)
        pieces.append(piece)
        at += len(piece) + 1
    flat = " ".join(pieces)
    rel = os.path.relpath(path, ROOT)
    for m in CITATION.finditer(flat):
        if flat.startswith("](", m.end()):
            continue  # the text of a link: the link's target is checked instead
        target, title = m.group(1), m.group(2) or m.group(3)
        line = bisect.bisect_right(starts, m.start())
        files = candidates(target, path)
        if not files:
            problems.append(f"{rel}:{line}: cites {target}, which does not exist")
        elif not any(cites(t, title) for f in files for t in headings(f)):
            problems.append(f"{rel}:{line}: cites {target}, \"{title}\": no such heading")


def check_links(path, text, problems):
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            url = m.group(1)
            if re.match(r"[a-z]+:", url):
                continue
            target, _, fragment = url.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            rel = os.path.relpath(path, ROOT)
            if not os.path.exists(dest):
                problems.append(f"{rel}:{number}: link to {url}: {target} does not exist")
            elif fragment and dest.endswith(".md") and fragment not in {anchor(t) for t in headings(dest)}:
                problems.append(f"{rel}:{number}: link to {url}: no heading with anchor #{fragment}")


def main():
    problems, citations = [], 0
    for path in source_files():
        if os.path.samefile(path, __file__):
            continue  # its own description names the forms it looks for
        text = read(path)
        citations += len(CITATION.findall(text))
        check_citations(path, text, problems)
        if path.endswith(".md"):
            check_links(path, text, problems)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} broken citation(s) or link(s)")
        return 1
    print(f"citations ok ({citations} citations and every relative link resolve)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
