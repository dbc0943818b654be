#!/usr/bin/env python3
"""Checks that every include follows the libraries' CMake dependencies.

A file may include a header of its own target, or of a target its target
depends on (directly or through others). Headers belong to the target that
compiles the .cc of the same name, else to the targets that compile sources
in the header's folder. The targets, their sources and their dependencies
come from CMake's file API (codemodel-v2) in a configured build folder;
scripts/build.sh asks for it before configuring.

It also fails on an include loop between folders (planner/search/ including
from planner/mixed/ and back), and with --stats FOLDER prints that folder's
top-level entries and the depth of its include graph.

Exit status: 0 clean, 1 a rule is broken (each break on a line), 2 usage.
"""
import argparse
import collections
import json
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXTENSIONS = ('.cc', '.cpp', '.cu', '.h', '.cuh', '.hpp')


def read_codemodel(build_dir):
    reply = os.path.join(build_dir, '.cmake', 'api', 'v1', 'reply')
    if not os.path.isdir(reply):
        raise SystemExit(f'check_layering: no CMake file-API reply in {reply}: write an empty file .cmake/api/v1/query/codemodel-v2 in the build folder and configure again')
    index = sorted(f for f in os.listdir(reply) if f.startswith('index-'))[-1]
    with open(os.path.join(reply, index)) as f:
        index_json = json.load(f)
    codemodel_file = next(o['jsonFile'] for o in index_json['objects'] if o['kind'] == 'codemodel')
    with open(os.path.join(reply, codemodel_file)) as f:
        codemodel = json.load(f)
    source_dir = codemodel['paths']['source']
    config = codemodel['configurations'][0]
    targets = {}
    for ref in config['targets']:
        with open(os.path.join(reply, ref['jsonFile'])) as f:
            t = json.load(f)
        sources = [s['path'] for s in t.get('sources', []) if not s.get('isGenerated')]
        targets[t['id']] = {
            'name': t['name'],
            'type': t['type'],
            'deps': [d['id'] for d in t.get('dependencies', [])],
            'sources': [os.path.normpath(p) for p in sources if not os.path.isabs(p)],
        }
    return source_dir, targets


def closure(targets):
    """Each target id -> the ids it may include from (itself and all it depends on)."""
    memo = {}

    def reach(tid, stack=()):
        if tid in memo:
            return memo[tid]
        out = {tid}
        for dep in targets[tid]['deps']:
            if dep in targets and dep not in stack:
                out |= reach(dep, stack + (tid,))
        memo[tid] = out
        return out

    for tid in targets:
        reach(tid)
    return memo


def owners(targets):
    """Files -> owning target ids: sources exactly, headers by their .cc or their folder."""
    by_file = collections.defaultdict(set)
    by_folder = collections.defaultdict(set)
    for tid, t in targets.items():
        for path in t['sources']:
            by_file[path].add(tid)
            by_folder[os.path.dirname(path)].add(tid)
    return by_file, by_folder


def owner_of(path, by_file, by_folder):
    if path in by_file:
        return by_file[path]
    stem = os.path.splitext(path)[0]
    for ext in ('.cc', '.cpp', '.cu'):
        if stem + ext in by_file:
            return by_file[stem + ext]
    return by_folder.get(os.path.dirname(path), set())


def project_files(source_dir, skip):
    for root, dirs, files in os.walk(source_dir):
        rel_root = os.path.relpath(root, source_dir)
        dirs[:] = [d for d in dirs if not d.startswith('.') and
                   os.path.normpath(os.path.join(rel_root, d)) not in skip]
        for name in files:
            if name.endswith(SOURCE_EXTENSIONS):
                yield os.path.normpath(os.path.join(rel_root, name))


def includes_of(source_dir, path):
    with open(os.path.join(source_dir, path), encoding='utf-8', errors='replace') as f:
        text = f.read()
    found = []
    for match in INCLUDE.finditer(text):
        name = match.group(1)
        line = text.count('\n', 0, match.start()) + 1
        if os.path.exists(os.path.join(source_dir, name)):
            found.append((name, line))
        elif os.path.exists(os.path.join(source_dir, os.path.dirname(path), name)):
            found.append((os.path.normpath(os.path.join(os.path.dirname(path), name)), line))
    return found


def folder_loops(edges):
    """Strongly connected sets of more than one folder (Tarjan)."""
    index, low, on_stack, stack, loops = {}, {}, set(), [], []
    counter = [0]
    nodes = set(edges) | {b for bs in edges.values() for b in bs}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                loops.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return loops


def depth(graph, start_nodes):
    """Longest include chain (in files) from any start node, loops cut."""
    memo = {}

    def longest(v, active):
        if v in memo:
            return memo[v]
        best = 1
        for w in graph.get(v, ()):
            if w not in active:
                best = max(best, 1 + longest(w, active | {w}))
        memo[v] = best
        return best

    return max((longest(v, {v}) for v in start_nodes), default=0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--build-dir', required=True, help='a configured CMake build folder')
    parser.add_argument('--stats', metavar='FOLDER', action='append', default=[],
                        help='print FOLDER\'s top-level entries and include depth')
    args = parser.parse_args()

    source_dir, targets = read_codemodel(args.build_dir)
    reach = closure(targets)
    by_file, by_folder = owners(targets)
    skip = {os.path.relpath(os.path.realpath(args.build_dir), source_dir)}
    skip |= {d for d in os.listdir(source_dir) if d.startswith('build')}

    problems = []
    folder_edges = collections.defaultdict(set)
    header_graph = collections.defaultdict(set)
    for path in sorted(project_files(source_dir, skip)):
        mine = owner_of(path, by_file, by_folder)
        for name, line in includes_of(source_dir, path):
            header_graph[path].add(name)
            a, b = os.path.dirname(path), os.path.dirname(name)
            if a != b:
                folder_edges[a].add(b)
            if not mine:
                continue
            theirs = owner_of(name, by_file, by_folder)
            if not theirs or mine & theirs:
                continue
            if any(reach[m] & theirs for m in mine):
                continue
            names = ', '.join(sorted(targets[t]['name'] for t in mine))
            their_names = ', '.join(sorted(targets[t]['name'] for t in theirs))
            problems.append(f'{path}:{line}: includes "{name}" ({their_names}), '
                            f'which {names} does not depend on')
    for loop in folder_loops(folder_edges):
        problems.append('include loop between folders: ' + ' <-> '.join(f + '/' for f in loop))

    for folder in args.stats:
        folder = os.path.normpath(folder)
        entries = sorted(os.listdir(os.path.join(source_dir, folder)))
        inside = {p: {n for n in ns if n.startswith(folder + '/')}
                  for p, ns in header_graph.items() if p.startswith(folder + '/')}
        print(f'{folder}/: {len(entries)} top-level entries; include graph {depth(inside, inside)} files deep')

    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
