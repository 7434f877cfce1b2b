#!/usr/bin/env python3
"""Condenses the USHMEM_HANG_STACKS blocks of a log: one line per thread,
innermost frame first; frames of ushmem's libraries and of the programs in
the build dir (argv[2]) named with addr2line, other libraries' unnamed
frames by library only.
usage: stack_lines.py LOG BUILD_DIR"""
import os
import re
import subprocess
import sys

log, build = sys.argv[1], sys.argv[2]
libs = {}
for sub in ("", "tests/cuda/", "tests/", "tests/device/", "bench/"):
    d = os.path.join(build, sub)
    if os.path.isdir(d):
        for name in os.listdir(d):
            libs.setdefault(name, os.path.join(d, name))
head = re.compile(r"^ushmem: PE (\d+): thread (\d+) \((.*)\):$")
frame = re.compile(r"^  (\S+?)(?:\((\S+)\+0x[0-9a-f]+\))? \[\+(0x[0-9a-f]+)\]$")
blocks, cur = [], None
for line in open(log, errors="replace"):
    line = line.rstrip("\n")
    m = head.match(line)
    if m:
        cur = [f"PE {m[1]} {m[3]}", []]
        blocks.append(cur)
        continue
    f = frame.match(line) if cur else None
    if f:
        cur[1].append((f[1], f[2], f[3]))
    elif cur and not line.startswith("  "):
        cur = None
need = {}
for _, frames in blocks:
    for lib, name, off in frames:
        if lib in libs and not name:
            need.setdefault(lib, set()).add(off)
names = {}
for lib, offs in need.items():
    offs = sorted(offs)
    try:
        out = subprocess.run(["addr2line", "-f", "-s", "-e", libs[lib]] + offs,
                             capture_output=True, text=True).stdout.split("\n")
    except OSError:
        out = []
    for i, off in enumerate(offs):
        fn = out[2 * i] if 2 * i + 1 < len(out) else "?"
        src = out[2 * i + 1] if 2 * i + 1 < len(out) else ""
        names[(lib, off)] = f"{fn}@{src.split(' ')[0]}"
for who, frames in blocks:
    parts, last = [], None
    for lib, name, off in frames:
        p = name or names.get((lib, off)) or lib.split(".so")[0]
        if p != last:
            parts.append(p)
        last = p
    print(f"{who}: " + " < ".join(parts))
