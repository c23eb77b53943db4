#!/usr/bin/env python3
"""The include graph of walfs's tree, checked against its layers.

Reads every #include "..." of the sources under the layer folders and checks
two rules, and a third with --strict (DESIGN.md, "Layers"; issue 27):

  1. no include runs up a layer:  base < tracing < journal < fs < mount
     < tools < crash, bench < tests  (crash and bench stand side by side and
     include neither each other);
  2. no circle between headers (a.h includes b.h includes ... a.h);
  3. (--strict) no circle between units, a unit being a header with its .cc
     files (x.h, x.cc): x's files include y.h and y's include x.h is a
     circle even where no header includes itself back.  Without --strict
     these are listed as notes: the tree still has some (a class whose
     nested parts have a header of their own, a handler table and its
     handlers), each a place to look at.

Prints what it read and each broken rule; exit 0 when none is broken, 1
otherwise, 2 for a bad command line.  --dot FILE writes the folder graph
(edges weighted by include count) for Graphviz.

Usage: scripts/include_graph.py [--root DIR] [--dot FILE] [--strict]
"""
import argparse
import collections
import os
import re
import sys

LAYERS = {"base": 0, "tracing": 1, "journal": 2, "fs": 3, "mount": 4, "tools": 5, "crash": 6, "bench": 6,
          "tests": 7}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(root):
    for top in LAYERS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".h", ".cc", ".c")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def unit_of(path):
    stem, _ = os.path.splitext(path)
    return stem


def strongly_connected(graph):
    """Tarjan's algorithm, iterative; the components of more than one node."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--dot", help="write the folder graph here (Graphviz)")
    ap.add_argument("--strict", action="store_true", help="circles between units break a rule too")
    args = ap.parse_args()
    root = os.path.abspath(args.root)

    files = list(sources(root))
    known = set(files)
    problems = []
    header_graph = collections.defaultdict(set)
    unit_graph = collections.defaultdict(set)
    folder_edges = collections.Counter()
    edges = 0
    for path in files:
        folder = path.split(os.sep)[0]
        with open(os.path.join(root, path), errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                if target not in known:
                    # Beside the file ("x.h"), or made by the build (generated/).
                    local = os.path.normpath(os.path.join(os.path.dirname(path), target))
                    if local in known:
                        target = local
                    else:
                        continue
                edges += 1
                to = target.split(os.sep)[0]
                if to != folder:
                    folder_edges[(folder, to)] += 1
                    if LAYERS[to] >= LAYERS[folder]:
                        problems.append(f"{path}:{lineno}: includes {target}: {folder} may not include {to} "
                                        f"(layers: base < tracing < journal < fs < mount < tools < crash, bench "
                                        f"< tests)")
                if path.endswith(".h"):
                    header_graph[path].add(target)
                if unit_of(path) != unit_of(target):
                    unit_graph[unit_of(path)].add(unit_of(target))

    for comp in strongly_connected(header_graph):
        problems.append("headers include each other in a circle: " + " -> ".join(comp))
    notes = ["units (a header and its .cc) depend on each other in a circle: " + ", ".join(comp)
             for comp in strongly_connected(unit_graph)]
    if args.strict:
        problems += notes
        notes = []

    print(f"include_graph: {len(files)} files, {edges} includes between them")
    for (a, b), n in sorted(folder_edges.items(), key=lambda e: (LAYERS[e[0][0]], e[0])):
        print(f"  {a:>8} -> {b:<8} {n:4d}")
    if args.dot:
        with open(args.dot, "w") as out:
            out.write("digraph walfs {\n  rankdir=BT;\n")
            for (a, b), n in sorted(folder_edges.items()):
                out.write(f'  "{a}" -> "{b}" [label="{n}"];\n')
            out.write("}\n")
    for n in notes:
        print("note: " + n)
    for p in problems:
        print(p)
    print(f"include_graph: {len(problems)} broken rule(s), {len(notes)} note(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
