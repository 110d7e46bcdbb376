#!/usr/bin/env python3
"""Re-runs every `$ build/epochcast …` command of README.md's console tour and puts its real
output (stdout, and the host-log note from stderr; JSON indented as the CLI prints it) in place. A block that was cut with "…" keeps as many lines as
before; lines longer than 200 characters are cut. Run from the repository root after a build
whose default model is cached (so no fitting progress lands in the output)."""
import json
import re
import subprocess
import sys

MAX_LINE = 200


def run(command: str) -> list[str]:
    shell_part = re.split(r"\s{2,}#", command, maxsplit=1)[0]  # drop a trailing "   # comment"
    out = subprocess.run(shell_part, shell=True, capture_output=True, text=True)
    stdout = out.stdout
    try:  # JSON is shown indented, as the CLI prints it (normalised, so the check is stable)
        stdout = json.dumps(json.loads(stdout), indent=2, ensure_ascii=False)
    except ValueError:
        pass
    notes = [l for l in out.stderr.splitlines() if l.startswith("epochcast: merging")]
    return notes + stdout.rstrip("\n").split("\n")


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else "README.md"
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i, in_console = [], 0, False
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_console = line.strip() == "```console" and not in_console
            out.append(line)
            i += 1
            continue
        if in_console and line.startswith("$ build/epochcast"):
            out.append(line)
            j = i + 1
            while j < len(lines) and not lines[j].startswith("$ ") and not lines[j].startswith("```"):
                j += 1
            old = lines[i + 1 : j]
            trailing_blank = bool(old) and old[-1] == ""
            body = old[:-1] if trailing_blank else old
            new = run(line[2:])
            if body and body[-1] == "…":
                new = new[: len(body) - 1] + ["…"]
            out.extend(l if len(l) <= MAX_LINE else l[:MAX_LINE] for l in new)
            if trailing_blank:
                out.append("")
            print(f"refreshed: {line[2:]}", file=sys.stderr)
            i = j
            continue
        out.append(line)
        i += 1
    open(path, "w", encoding="utf-8").write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
