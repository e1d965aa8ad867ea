#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (default 120 lines, as .clang-tidy's
readability-function-size), over whole folders: clang-tidy runs only on the files a change
touches and cannot parse the LibTorch translation units, so this is the tree-wide check.

    python3 tools/function_size.py [--max 120] [DIR ...]   # default: the code folders

A function counts from its signature's line to its closing brace (lambdas inside it included).
One kept longer states why in the comment above it, with the words "longer than 120 lines"
(docs/design.md, "Code shape"). Exits 1 when any other function is over the limit.

The parser is a brace matcher over the source with comments, strings and character literals
blanked: a `{` opens a function when the text before it (since the previous `;`, `{` or `}`)
has a parameter list, is not a control statement or an initialiser, and every enclosing brace
is a namespace, class or struct.
"""
import argparse
import os
import re
import sys

CODE_DIRS = ["sim", "models", "calibration", "policy", "tools", "tests"]
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|else|do|return|try)\b")
REASON = "longer than 120 lines"


def blank(src):
    """Source with comments, strings and character literals replaced by blanks (lines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        m = re.match(r'R"([^(\s]*)\(', src[i:i + 20]) if src.startswith('R"', i) else None
        if m:
            end = src.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
            continue
        c = src[i]
        if c == '"' or (c == "'" and not (i > 0 and src[i - 1].isalnum())):
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def long_functions(path, limit):
    raw = open(path, encoding="utf-8", errors="replace").read()
    raw_lines = raw.split("\n")
    s = blank(raw)
    stack, line, last, found = [], 1, 0, []
    for i, c in enumerate(s):
        if c == "\n":
            line += 1
        if c not in ";{}":
            continue
        if c == "{":
            head = " ".join(s[last:i].split())
            kind = "other"
            if re.search(r"\bnamespace\b", head) and "(" not in head:
                kind = "scope"
            elif re.search(r"\b(class|struct|union|enum)\b", head) and "(" not in head:
                kind = "scope"
            elif head.startswith('extern ""'):
                kind = "scope"
            elif ("(" in head and ")" in head and not CONTROL.match(head)
                  and "=" not in head.split("(")[0] and not head.endswith("]")
                  and all(k == "scope" for k, _, _ in stack)):
                kind = "function"
            # The signature may span lines: count from its first line.
            j = last
            while j < i and s[j] in " \t\n":
                j += 1
            start = line - s[j:i].count("\n")
            stack.append((kind, start, head))
        elif c == "}" and stack:
            kind, start, head = stack.pop()
            length = line - start + 1
            if kind == "function" and length > limit:
                above = "\n".join(raw_lines[max(0, start - 12):start - 1])
                if REASON not in above:
                    found.append((length, path, start, head))
        last = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max", type=int, default=120)
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = a.dirs or [os.path.join(root, d) for d in CODE_DIRS]
    found = []
    for d in dirs:
        for dp, _, files in os.walk(d):
            for f in sorted(files):
                if f.endswith((".cpp", ".hpp")):
                    found += long_functions(os.path.join(dp, f), a.max)
    for length, path, start, head in sorted(found, reverse=True):
        print(f"{os.path.relpath(path, root)}:{start}: {length} lines: {head[-90:]}")
    print(f"function_size.py: {len(found)} functions over {a.max} lines without a stated reason")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
