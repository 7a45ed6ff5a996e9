#!/bin/sh
# The README is a first-run page, and the documentation holds together:
#   - README.md has at most 220 lines;
#   - it starts with the two commands of a fresh Debian 12 machine (make
#     demo, make test: what tests/check-fresh.sh runs), in its first 15
#     lines;
#   - its first screenful (40 lines) says what the tool finds (a "What it
#     finds" heading) and shows a picture that exists;
#   - every page docs/*.md is linked from README.md;
#   - every relative link and image in README.md and docs/*.md names a
#     file that exists, and, with a #anchor into a Markdown file, a
#     heading of that file: GitHub's anchors (lower case, punctuation
#     dropped, spaces to '-', -1, -2... for repeated headings).
# Links in code (fenced blocks, `spans`) are not links and are skipped.
# plain build only: it reads the documentation, and runs no tracer
. "$(dirname "$0")/lib.sh"
need python3

cat >"$TMP/docs.py" <<'EOF'
import glob, os, re, sys

top = sys.argv[1]
readme = os.path.join(top, "README.md")
problems = []

def rel(path):
    return os.path.relpath(path, top)

def text_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read()

FENCE = re.compile(r"^\s*(```|~~~)")

def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    inside = False
    for n, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield n, line

def anchor(title, seen):
    """GitHub's anchor for a heading's text."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", title)  # links, images
    t = t.replace("`", "").replace("*", "")
    t = re.sub(r"<[^>]+>", "", t).strip().lower()
    t = "".join(c for c in t if c.isalnum() or c in " -_")
    a = t.replace(" ", "-")
    n = seen.get(a, 0)
    seen[a] = n + 1
    return a if n == 0 else "%s-%d" % (a, n)

anchors_cache = {}
def anchors(path):
    if path not in anchors_cache:
        seen, found = {}, set()
        for _, line in prose_lines(text_of(path)):
            m = re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if m:
                found.add(anchor(m.group(2), seen))
        anchors_cache[path] = found
    return anchors_cache[path]

LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)")

def links(path):
    """(line, is_image, target) of every link outside code."""
    out = []
    for n, line in prose_lines(text_of(path)):
        line = re.sub(r"`[^`]*`", "", line)  # code spans
        for m in LINK.finditer(line):
            out.append((n, m.group(1) == "!", m.group(3)))
        m = REFDEF.match(line)
        if m:
            out.append((n, False, m.group(1)))
    return out

def resolve(src, target):
    """The file a relative target names, and its anchor; None if external."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
        return None
    path, _, frag = target.partition("#")
    f = os.path.normpath(os.path.join(os.path.dirname(src), path)) if path else src
    return f, frag

pages = sorted(glob.glob(os.path.join(top, "docs", "*.md")))
linked_from_readme = set()
for src in [readme] + pages:
    for n, image, target in links(src):
        if not target:
            problems.append("%s:%d: an empty link" % (rel(src), n))
            continue
        r = resolve(src, target)
        if r is None:
            continue
        f, frag = r
        if src == readme:
            linked_from_readme.add(f)
        if not os.path.exists(f):
            problems.append("%s:%d: %s names %s, which does not exist"
                            % (rel(src), n, target, rel(f)))
            continue
        if frag and f.endswith(".md") and frag not in anchors(f):
            problems.append("%s:%d: %s: %s has no heading whose anchor is #%s"
                            % (rel(src), n, target, rel(f), frag))

for p in pages:
    if p not in linked_from_readme:
        problems.append("README.md does not link to %s" % rel(p))

lines = text_of(readme).split("\n")
if lines and lines[-1] == "":
    lines.pop()
if len(lines) > 220:
    problems.append("README.md has %d lines, more than 220: move the detail to docs/"
                    % len(lines))

# the two commands, as tests/check-fresh.sh takes them: the first code
# block after "fresh Debian 12", comments dropped
cmds, start, seen, inside = [], None, False, False
for n, line in enumerate(lines, 1):
    if "fresh Debian 12" in line:
        seen = True
    if seen and line.startswith("```"):
        if inside:
            break
        inside, start = True, n
        continue
    if inside:
        c = re.sub(r"[ \t]*#.*", "", line)
        if c:
            cmds.append(c)
if cmds != ["make demo", "make test"]:
    problems.append("README.md's first code block after \"fresh Debian 12\" runs %r, "
                    "not make demo and make test" % cmds)
elif start > 15:
    problems.append("README.md's two commands start at line %d, not in its first 15 lines"
                    % start)

screen = lines[:40]
if not any(re.match(r"^#{1,3} What (it|pprof-alloc) finds", l) for l in screen):
    problems.append("README.md's first 40 lines have no \"What it finds\" heading")
images = [m.group(3) for l in screen for m in LINK.finditer(l) if m.group(1) == "!"]
if not any(os.path.isfile(os.path.join(top, t)) for t in images):
    problems.append("README.md's first 40 lines show no picture (images: %r)" % images)

print("checked %d pages, %d links" % (1 + len(pages),
      sum(len(links(p)) for p in [readme] + pages)))
for p in problems:
    print("PROBLEM " + p)
EOF

python3 "$TMP/docs.py" "$TOP" >"$TMP/docs.out" 2>&1 ||
	{ cat "$TMP/docs.out" >&2; fail "the documentation checker failed"; }
grep -v '^PROBLEM ' "$TMP/docs.out" | sed 's/^/--- /'
grep -q '^checked ' "$TMP/docs.out" || fail "the checker said nothing"
grep '^PROBLEM ' "$TMP/docs.out" >"$TMP/problems"
while IFS= read -r line; do
	check_failed "${line#PROBLEM }"
done <"$TMP/problems"
finish
