#!/usr/bin/env python3
"""Runs the shell examples of the docs as a reader would type them.

Every ```sh block of the given Markdown files is run, command by command,
in one scratch folder per file (so a plan one command writes is there for
the next), with `cleave`, `cleave-opt` and `build/tools/...` resolving to
the build under test and `test/`, `docs/` and `scripts/` to the repository.
A command passes when it exits 0. A block the reader cannot run as written
(a synopsis with placeholders, a file an earlier non-shell step makes) is
preceded by a line

    <!-- docs-test: skip (why) -->

and is listed as skipped with its reason; a skip without a reason is an
error, so that nothing is skipped silently.

    check_docs_examples.py --repo DIR --build DIR FILE.md...

Prints one line per command (`ok`, `FAIL` with the file and line) and a
summary; exits 1 when any command failed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*(\((?P<why>[^)]*)\))?\s*-->")


def blocks(path):
    """(first line number, lines, skip reason or None) of each ```sh block."""
    lines = open(path, encoding="utf-8").read().splitlines()
    found = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            skip = None
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            if j >= 0:
                m = SKIP.search(lines[j])
                if m:
                    skip = m.group("why") or ""
            body = []
            k = i + 1
            while k < len(lines) and lines[k].strip() != "```":
                body.append((k + 1, lines[k]))
                k += 1
            found.append((i + 1, body, skip))
            i = k
        i += 1
    return found


def strip_comment(text):
    """`text` without a trailing `# comment` (a # outside quotes that
    starts a word)."""
    quote = None
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip()
    return text


def commands(body):
    """(line, command) with backslash continuations joined and trailing
    `# comments` dropped."""
    out, current, start = [], "", None
    for number, text in body:
        text = strip_comment(text.strip())
        if not text:
            continue
        if start is None:
            start = number
        if text.endswith("\\"):
            current += text[:-1] + " "
            continue
        out.append((start, current + text))
        current, start = "", None
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    repo, build = os.path.abspath(args.repo), os.path.abspath(args.build)
    tools = os.path.join(build, "tools")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(
        [os.path.join(tools, "cleave"), os.path.join(tools, "cleave-opt"),
         os.path.join(tools, "cleave-worker"), env.get("PATH", "")])
    failed = ran = skipped = 0
    for md in args.files:
        rel = os.path.relpath(md, repo)
        with tempfile.TemporaryDirectory(prefix="cleave-docs-") as scratch:
            for name in ("test", "docs", "scripts", "bench"):
                os.symlink(os.path.join(repo, name),
                           os.path.join(scratch, name))
            os.symlink(build, os.path.join(scratch, "build"))
            for line, body, skip in blocks(md):
                if skip is not None:
                    if not skip.strip():
                        print(f"FAIL {rel}:{line}: a skipped block must say "
                              f"why: <!-- docs-test: skip (why) -->")
                        failed += 1
                    else:
                        print(f"skip {rel}:{line}: {skip}")
                        skipped += 1
                    continue
                for number, command in commands(body):
                    # The README's `bash scripts/setup.sh ...` lines are what
                    # CI itself runs: not again from inside a test.
                    if command.startswith("bash scripts/setup.sh"):
                        print(f"skip {rel}:{number}: {command} (CI runs it)")
                        skipped += 1
                        continue
                    started = time.monotonic()
                    try:
                        done = subprocess.run(
                            ["bash", "-o", "pipefail", "-c", command],
                            cwd=scratch, env=env, capture_output=True,
                            text=True, timeout=args.timeout)
                        status = done.returncode
                        tail = (done.stderr or done.stdout).strip()
                    except subprocess.TimeoutExpired:
                        status, tail = "timeout", ""
                    seconds = time.monotonic() - started
                    ran += 1
                    if status == 0:
                        print(f"ok   {rel}:{number} ({seconds:.1f} s): "
                              f"{command[:100]}")
                    else:
                        failed += 1
                        print(f"FAIL {rel}:{number} (exit {status}): "
                              f"{command}")
                        for text in tail.splitlines()[-5:]:
                            print(f"     {text}")
    print(f"{ran} command(s) run, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
