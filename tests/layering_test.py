#!/usr/bin/env python3
"""Fails if a source folder includes a header of a layer it must not depend on
(docs/architecture.md): runtime <- numerics <- hamiltonians; analysis uses runtime and
numerics/base only; app may include everything; nothing includes app/. Inside app/
(docs/architecture.md, "The app"): cli/ sees no other app folder, and only run/ sees run/."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
# folder -> prefixes of our headers it must not include
forbidden = {
    "runtime": ["numerics/", "hamiltonians/", "analysis/", "app/"],
    "numerics": ["hamiltonians/", "analysis/", "app/"],
    "hamiltonians": ["analysis/", "app/", "numerics/cpu/", "numerics/reference/", "numerics/cuda/"],
    "analysis": ["hamiltonians/", "app/", "numerics/sparse/", "numerics/spmmv/", "numerics/kpm/",
                 "numerics/lanczos/", "numerics/cpu/", "numerics/reference/", "numerics/cuda/"],
    "app/cli": ["app/run/", "app/mpi/", "app/checkpoint/", "app/plan/"],
    "app/mpi": ["app/run/", "app/checkpoint/", "app/plan/"],
    "app/checkpoint": ["app/run/", "app/mpi/", "app/plan/"],
    "app/plan": ["app/run/", "app/mpi/", "app/checkpoint/"],
}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
violations = []
for folder, bad in forbidden.items():
    for path in sorted((root / folder).rglob("*")):
        if path.suffix not in {".hpp", ".cpp", ".h", ".cu", ".cuh"}:
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = include.match(line)
            if m and any(m.group(1).startswith(b) for b in bad):
                violations.append(f"{path.relative_to(root)}:{lineno}: includes {m.group(1)}")
# Only the three backend-neutral numerics folders may be seen by algorithms.
for path in sorted((root / "numerics").rglob("*")):
    if path.suffix in {".hpp", ".cpp"} and path.parts[-2] in {"kpm", "lanczos"}:
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = include.match(line)
            if m and m.group(1).startswith(("numerics/cpu/", "numerics/reference/", "numerics/cuda/")):
                violations.append(f"{path.relative_to(root)}:{lineno}: algorithm includes backend {m.group(1)}")
if violations:
    print("layering violations:\n  " + "\n  ".join(violations))
    sys.exit(1)
print("layering: no violations")
