#!/usr/bin/env python3
"""Check the dependency rule of docs/architecture.md against the code.

The engine crate (crates/shale/src): every top-level module (folder or file) sits on the
floor the ```floors block of docs/architecture.md gives it, and may import (`crate::x`)
only modules on lower floors. The CLI crate (crates/shale-cli/src): no two top-level
modules import each other, directly or through others.

An import is any `crate::` path (use groups included, nested or not), any `super::` path that
climbs out of its top-level module, and any root re-export of lib.rs (`crate::Db` counts as
an import of `db`). Comments and string literals are ignored. Test code is left out: files
named *tests*.rs, testutil.rs, test_fs.rs, and `#[cfg(test)]` items. Exits 1 with one line per broken import; 0 when the code keeps the rule.
Run from anywhere: python3 scripts/check_deps.py
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINE = os.path.join(ROOT, "crates/shale/src")
CLI = os.path.join(ROOT, "crates/shale-cli/src")
# Crates whose top-level modules must not import each other in a circle.
ACYCLIC = [
    CLI,
    os.path.join(ROOT, "crates/shale-server/src"),
    os.path.join(ROOT, "crates/shale-py/src"),
]
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


def strip_literals(src):
    """`src` without comments, string literals and character literals (their braces and
    paths must not count)."""
    out = []
    i = 0
    n = len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == "r" and re.match(r'r#*"', src[i:]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", src[i:]).group(1)
            end = src.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 4]):
            m = re.match(r"'(\\.|[^\\'])'", src[i:i + 4])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_tests(src):
    """The source without `#[cfg(test)]` items (brace-matched)."""
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


IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def group_heads(text):
    """The first path segment of each element of the `{...}` group `text` starts with."""
    depth = 0
    elems, cur = [], []
    for ch in text:
        if ch == "{":
            depth += 1
            if depth == 1:
                continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                elems.append("".join(cur))
                break
        if depth == 1 and ch == ",":
            elems.append("".join(cur))
            cur = []
        elif depth >= 1:
            cur.append(ch)
    heads = []
    for e in elems:
        m = re.match(r"\s*(" + IDENT + ")", e)
        if m:
            heads.append(m.group(1))
    return heads


def module_path(rel):
    """The module path of a source file: `layout/flsm/mod.rs` -> [layout, flsm]."""
    parts = rel[:-3].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return parts


def referenced_roots(rel, src):
    """Every top-level item of the crate that `src` (the file `rel`) names: through `crate::`
    paths (groups included) and `super::` paths that climb to the crate root."""
    here = module_path(rel)
    found = []
    for m in re.finditer(r"\b((?:super::)+|crate::)", src):
        prefix = m.group(1)
        rest = src[m.end():]
        if prefix == "crate::":
            base_depth = 0
        else:
            ups = prefix.count("super::")
            # A `mod.rs` is its folder's module: `super` from it leaves the folder.
            base_depth = len(here) - ups
            if base_depth > 0:
                continue  # stays inside the top-level module
            if base_depth < 0:
                continue  # not valid Rust
        if rest.startswith("{"):
            found.extend(group_heads(rest))
        else:
            mm = re.match(IDENT, rest)
            if mm:
                found.append(mm.group(0))
    return found


def root_reexports(crate_dir):
    """Names that lib.rs re-exports, mapped to the module they come from (`Db` -> db)."""
    path = os.path.join(crate_dir, "lib.rs")
    if not os.path.exists(path):
        return {}
    src = strip_literals(open(path, encoding="utf-8").read())
    names = {}
    for m in re.finditer(r"pub\s+use\s+(" + IDENT + r")::", src):
        mod = m.group(1)
        rest = src[m.end():]
        if rest.startswith("{"):
            depth, body = 0, []
            for ch in rest:
                body.append(ch)
                depth += ch == "{"
                depth -= ch == "}"
                if depth == 0:
                    break
            for name in re.findall(IDENT, "".join(body)):
                names.setdefault(name, mod)
        else:
            mm = re.match(r"(?:" + IDENT + r"::)*(" + IDENT + r")", rest)
            if mm:
                names.setdefault(mm.group(1), mod)
    return names


def imports(crate_dir):
    """{module: {imported module: [files]}} for the crate's top-level modules."""
    reexports = root_reexports(crate_dir)
    top = modules(crate_dir)
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
            src = strip_tests(strip_literals(open(path, encoding="utf-8").read()))
            for name in referenced_roots(rel, src):
                target = name if name in top else reexports.get(name)
                if target and target != mod:
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
                errors.append(f"crates/shale/src/{files[0]}: imports {target}, not on any floor")
                continue
            if mod in table and table[target] >= table[mod]:
                errors.append(
                    f"crates/shale/src/{files[0]}: {mod} (floor {table[mod]}) imports "
                    f"{target} (floor {table[target]}); a module may import only lower floors"
                )


def check_acyclic(crate_dir, errors):
    """No two top-level modules of the crate import each other, directly or through others."""
    edges = imports(crate_dir)
    mods = modules(crate_dir)
    shown = os.path.relpath(crate_dir, ROOT)

    def reaches(a, b, seen):
        if a == b:
            return True
        seen.add(a)
        return any(reaches(n, b, seen) for n in edges.get(a, {}) if n in mods and n not in seen)

    for a, targets in sorted(edges.items()):
        for b, files in sorted(targets.items()):
            if b in mods and reaches(b, a, set()):
                errors.append(
                    f"{shown}/{files[0]}: {a} imports {b}, which imports {a} "
                    "back (directly or through others)"
                )


def main():
    errors = []
    check_engine(errors)
    for crate in ACYCLIC:
        check_acyclic(crate, errors)
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} imports break the dependency rule of docs/architecture.md")
        return 1
    print("dependency rule of docs/architecture.md: kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
