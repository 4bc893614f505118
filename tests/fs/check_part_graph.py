#!/usr/bin/env python3
"""The parts of fs/ form a DAG, and docs/architecture.md draws it as it is.

A part is a class of fs/*.h declared `class X final : public Part`. Its
constructor names the parts it holds (`Monitor(Model& m, Tree& tree, ...)`):
each parameter whose type is another part is an edge X -> that part. This
reads those constructors and checks that
  - no part holds Parts (every part and the model: the root's view),
  - every part's constructor names its dependencies (no inherited one),
  - the graph is acyclic,
  - it equals the mermaid drawing under the heading "The parts of fs/ and
    what each uses" of docs/architecture.md (one `A --> B` line per edge,
    every part a node).
Then it checks itself: a back edge planted in a constructor and an edge
dropped from the drawing must each be reported.

Usage: check_part_graph.py [ROOT]   (default: the repository holding this file)
Prints what is wrong and exits 1."""

import glob
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
HEADING = "The parts of fs/ and what each uses"

PART_DECL = re.compile(r"^class (\w+) final : public Part \{$", re.M)
EDGE = re.compile(r"^\s*(\w+)\s*-->\s*(\w+)\s*$")


def class_bodies(text):
    """{name: body} of the parts declared in a header's text."""
    out = {}
    for m in PART_DECL.finditer(text):
        end = text.find("\n};", m.end())
        out[m.group(1)] = text[m.end():end if end >= 0 else len(text)]
    return out


def read_headers(root):
    return {os.path.relpath(p, root): open(p, encoding="utf-8").read()
            for p in sorted(glob.glob(os.path.join(root, "fs", "*.h")))}


def graph_of(headers):
    """({part: set of parts it holds}, [problems])."""
    bodies = {}
    for text in headers.values():
        bodies.update(class_bodies(text))
    graph, problems = {}, []
    for text in headers.values():
        base = re.search(r"^class Part \{$(.*?)^\};", text, re.M | re.S)
        if base and re.search(r"\bParts\b", base.group(1)):
            problems.append("class Part (what every part holds) holds Parts (every part)")
    for name, body in bodies.items():
        if re.search(r"\bParts\s*[&*]", body):
            problems.append(f"part {name} holds Parts (every part): take the parts it calls instead")
        ctor = re.search(r"(?<![~\w])" + name + r"\(([^)]*)\)", body)
        if ctor is None:
            problems.append(f"part {name} declares no constructor naming what it holds")
            graph[name] = set()
            continue
        deps = set()
        for param in ctor.group(1).split(","):
            m = re.match(r"\s*(?:const\s+)?(\w+)\s*&", param)
            if m and m.group(1) in bodies:
                deps.add(m.group(1))
        graph[name] = deps
    return graph, problems


def cycle_of(graph):
    """A cycle as a list of parts (first == last), or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                c = visit(d)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def drawing_of(doc):
    """({part: set}, nodes, [problems]) of the section's mermaid block."""
    lines = doc.split("\n")
    try:
        start = next(i for i, l in enumerate(lines) if re.match(r"^#+\s+" + re.escape(HEADING) + r"\s*$", l))
    except StopIteration:
        return {}, set(), [f'docs/architecture.md has no heading "{HEADING}"']
    i = start + 1
    while i < len(lines) and lines[i].strip() != "```mermaid":
        if lines[i].startswith("#"):
            return {}, set(), [f'"{HEADING}" has no mermaid block before its next heading']
        i += 1
    graph, nodes, problems = {}, set(), []
    for j in range(i + 1, len(lines)):
        line = lines[j]
        if line.strip() == "```":
            break
        if not line.strip() or line.strip().startswith("%%") or line.strip().startswith("flowchart"):
            continue
        m = EDGE.match(line)
        if m:
            graph.setdefault(m.group(1), set()).add(m.group(2))
            nodes |= {m.group(1), m.group(2)}
        elif re.match(r"^\s*\w+\s*$", line):
            nodes.add(line.strip())
        else:
            problems.append(f"docs/architecture.md:{j + 1}: not `A --> B` or a node name: {line.strip()}")
    else:
        problems.append(f'"{HEADING}": the mermaid block is not closed')
    return graph, nodes, problems


def edges(g):
    return {(a, b) for a, ds in g.items() for b in ds}


def check(headers, doc):
    """The problems of this source and drawing (empty: all good)."""
    graph, problems = graph_of(headers)
    if not graph:
        return ["no part found in fs/*.h (class X final : public Part)"]
    c = cycle_of(graph)
    if c:
        problems.append("the parts call each other in a cycle: " + " -> ".join(c))
    drawn, nodes, dproblems = drawing_of(doc)
    problems += dproblems
    for n in sorted(set(graph) - nodes):
        problems.append(f"part {n} is not in the drawing")
    for n in sorted(nodes - set(graph)):
        problems.append(f"the drawing has {n}, which is no part")
    for a, b in sorted(edges(graph) - edges(drawn)):
        problems.append(f"{a} takes {b} in its constructor but the drawing has no {a} --> {b}")
    for a, b in sorted(edges(drawn) - edges(graph)):
        problems.append(f"the drawing has {a} --> {b} but {a}'s constructor takes no {b}")
    return problems


def plant_back_edge(headers, graph):
    """The headers with a constructor of a part that some part holds taking
    that part back: (headers, what was planted)."""
    a, b = sorted(edges(graph))[0]  # a holds b: make b hold a
    out = dict(headers)
    for path, text in headers.items():
        m = re.search(r"^class " + b + r" final : public Part \{$", text, re.M)
        if not m:
            continue
        ctor = re.compile(r"(?<![~\w])(" + b + r"\()(Model& m)")
        new, n = ctor.subn(r"\1\2, " + a + "& back", text[m.end():], count=1)
        assert n == 1, f"could not plant {b} -> {a}"
        out[path] = text[:m.end()] + new
        return out, f"{b} -> {a}"
    raise AssertionError(f"no header declares {b}")


def main():
    headers = read_headers(ROOT)
    doc = open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8").read()
    problems = check(headers, doc)
    for p in problems:
        print(p)
    if problems:
        return 1
    graph, _ = graph_of(headers)
    print(f"{len(graph)} parts, {len(edges(graph))} edges, acyclic; the drawing matches:")
    for a in sorted(graph):
        print(f"  {a} -> {', '.join(sorted(graph[a])) or '(nothing)'}")

    # The checker itself: a planted back edge and a dropped drawn edge fail.
    planted, what = plant_back_edge(headers, graph)
    found = check(planted, doc)
    if not any("cycle" in p for p in found):
        print(f"self-test: a planted back edge {what} was not reported as a cycle")
        return 1
    print(f"self-test: planted back edge {what}: {found[0]}")
    a, b = sorted(edges(graph))[-1]
    dropped = re.sub(r"^\s*" + a + r"\s*-->\s*" + b + r"\s*\n", "", doc, count=1, flags=re.M)
    found = check(headers, dropped)
    if not found:
        print(f"self-test: dropping {a} --> {b} from the drawing was not reported")
        return 1
    print(f"self-test: dropped {a} --> {b} from the drawing: {found[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
