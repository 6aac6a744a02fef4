"""Summarise a cargo --timings report: total compile CPU seconds and the slowest crates.

    python3 scripts/build_timings.py TARGET/cargo-timings/cargo-timing.html [N]

Prints a Markdown table of the N (default 10) crates with the most compile time (all units of
a crate summed: lib, build script, tests, examples), with their share of the total. polars-*
crates are also shown summed in one line, as arrow-rs's were before issue 40.
"""

import json
import re
import sys


def main() -> None:
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    html = open(path, encoding="utf-8").read()
    m = re.search(r"const UNIT_DATA = (\[.*?\]);\n", html, re.S)
    if not m:
        sys.exit(f"{path}: no UNIT_DATA (not a cargo --timings report?)")
    units = json.loads(m.group(1))
    total = sum(u["duration"] for u in units)
    per_crate: dict[str, float] = {}
    for u in units:
        per_crate[u["name"]] = per_crate.get(u["name"], 0.0) + u["duration"]
    polars = sum(v for k, v in per_crate.items() if k.startswith("polars"))
    arrow = sum(v for k, v in per_crate.items() if k.startswith("arrow") or k == "parquet")
    print(f"units: {len(units)}; compile time summed over units: {total:.0f} s")
    print(f"polars-* together: {polars:.0f} s ({100 * polars / total:.1f} %); "
          f"arrow-rs + parquet together: {arrow:.0f} s")
    print()
    print("| crate | s | share |")
    print("|---|---:|---:|")
    for name, s in sorted(per_crate.items(), key=lambda kv: -kv[1])[:n]:
        print(f"| {name} | {s:.1f} | {100 * s / total:.1f} % |")


if __name__ == "__main__":
    main()
