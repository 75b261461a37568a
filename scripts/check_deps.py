#!/usr/bin/env python3
"""Check the dependency rule of docs/architecture.md against the code.

The engine crate (crates/shale/src): every top-level module (folder or file) sits on the
floor the ```floors block of docs/architecture.md gives it, and may import (`crate::x`)
only modules on lower floors. The CLI crate (crates/shale-cli/src): no two top-level
modules import each other, directly or through others.

Test code is left out: files named *tests*.rs, testutil.rs, test_fs.rs, and `#[cfg(test)]`
items. Exits 1 with one line per broken import; 0 when the code keeps the rule.
Run from anywhere: python3 scripts/check_deps.py
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINE = os.path.join(ROOT, "crates/shale/src")
CLI = os.path.join(ROOT, "crates/shale-cli/src")
DOC = os.path.join(ROOT, "docs/architecture.md")


def floors():
    text = open(DOC, encoding="utf-8").read()
    m = re.search(r"```floors\n(.*?)```", text, re.S)
    if not m:
        sys.exit(f"{DOC}: no ```floors block")
    table = {}
    for line in m.group(1).splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        n, *mods = line.split()
        for mod in mods:
            table[mod] = int(n)
    return table


def is_test_file(name):
    return "tests" in name or name in ("testutil.rs", "test_fs.rs")


def strip_tests_and_comments(src):
    """The source without comments and without `#[cfg(test)]` items (brace-matched)."""
    src = re.sub(r"//[^\n]*", "", src)
    out = []
    i = 0
    while True:
        j = src.find("#[cfg(test)]", i)
        if j < 0:
            out.append(src[i:])
            break
        out.append(src[i:j])
        # Skip the attribute's item: up to `;` or to the brace that closes its block.
        k = j + len("#[cfg(test)]")
        semi = src.find(";", k)
        brace = src.find("{", k)
        if brace < 0 or (0 <= semi < brace):
            i = semi + 1 if semi >= 0 else len(src)
            continue
        depth = 0
        for p in range(brace, len(src)):
            if src[p] == "{":
                depth += 1
            elif src[p] == "}":
                depth -= 1
                if depth == 0:
                    i = p + 1
                    break
        else:
            i = len(src)
    return "".join(out)


def imports(crate_dir):
    """{module: {imported module: [files]}} for the crate's top-level modules."""
    edges = defaultdict(lambda: defaultdict(list))
    for root, _, files in os.walk(crate_dir):
        for f in sorted(files):
            if not f.endswith(".rs") or is_test_file(f):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, crate_dir)
            if rel in ("lib.rs", "main.rs"):
                continue
            mod = rel.split(os.sep)[0].removesuffix(".rs")
            src = strip_tests_and_comments(open(path, encoding="utf-8").read())
            for m in re.finditer(r"\bcrate::([a-z_][a-z0-9_]*)", src):
                target = m.group(1)
                if target != mod:
                    edges[mod][target].append(rel)
            # `use crate::{a, b::c}` groups
            for g in re.finditer(r"\bcrate::\{([^}]*)\}", src):
                for part in g.group(1).split(","):
                    target = part.strip().split("::")[0]
                    if target and target != mod and target[0].islower():
                        edges[mod][target].append(rel)
    return edges


def modules(crate_dir):
    found = set()
    for f in os.listdir(crate_dir):
        p = os.path.join(crate_dir, f)
        if os.path.isdir(p):
            found.add(f)
        elif f.endswith(".rs") and f not in ("lib.rs", "main.rs") and not is_test_file(f):
            found.add(f.removesuffix(".rs"))
    return found


def check_engine(errors):
    table = floors()
    edges = imports(ENGINE)
    for mod in sorted(modules(ENGINE)):
        if mod not in table:
            errors.append(f"crates/shale/src/{mod}: not on any floor of docs/architecture.md")
    for mod, targets in sorted(edges.items()):
        for target, files in sorted(targets.items()):
            if target not in table:
                # Not a module (a re-exported item such as crate::Error or crate::Result).
                continue
            if mod in table and table[target] >= table[mod]:
                errors.append(
                    f"crates/shale/src/{files[0]}: {mod} (floor {table[mod]}) imports "
                    f"{target} (floor {table[target]}); a module may import only lower floors"
                )


def check_cli(errors):
    edges = imports(CLI)
    mods = modules(CLI)

    def reaches(a, b, seen):
        if a == b:
            return True
        seen.add(a)
        return any(reaches(n, b, seen) for n in edges.get(a, {}) if n in mods and n not in seen)

    for a, targets in sorted(edges.items()):
        for b, files in sorted(targets.items()):
            if b in mods and reaches(b, a, set()):
                errors.append(
                    f"crates/shale-cli/src/{files[0]}: {a} imports {b}, which imports {a} "
                    "back (directly or through others)"
                )


def main():
    errors = []
    check_engine(errors)
    check_cli(errors)
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} imports break the dependency rule of docs/architecture.md")
        return 1
    print("dependency rule of docs/architecture.md: kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
