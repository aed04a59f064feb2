#!/usr/bin/env python3
"""Fails if a source file includes a project header that its CMake library does not link
(docs/architecture.md, "Layers"): runtime <- numerics <- hamiltonians; analysis uses runtime
and numerics/base only; app may include everything; nothing includes app/. Inside app/
(docs/architecture.md, "The app"): cli/ sees no other app folder, and only run/ sees run/.

numerics/ is several libraries (numerics/CMakeLists.txt, numerics/sparse_direct/CMakeLists.txt):
  topokpm_numerics       base sparse spmmv cpu reference kpm lanczos eigs; links runtime and,
                         privately, topokpm_dense (ChebFD's tall-skinny QR). No MPI.
  topokpm_dense          dense/ (not block_cyclic*): links topokpm_tasks (runtime/tasks,
                         runtime/topology, runtime/base) only, so of numerics/ it may include
                         only the header-only files of numerics/base.
  topokpm_dense_mpi      dense/block_cyclic*: topokpm_dense + runtime/mpi.
  topokpm_sparse_direct  sparse_direct/ (not distributed_lu*): topokpm_numerics + topokpm_tasks.
  topokpm_sparse_direct_mpi  sparse_direct/distributed_lu*: + runtime/mpi, topokpm_dense_mpi.
  topokpm_distributed    distributed/: topokpm_numerics + runtime/mpi (its users only).
The algorithms (kpm, lanczos, eigs) see operators through numerics/base/operator.hpp only:
no backend, no storage format, nothing of numerics/spmmv (no concrete operator or factory, no
kernel contract, no width registry: strip-mining and the single-precision dot bound are the
Operator's).

The three solver libraries eigs/, dense/ and sparse_direct/ see each other (and kpm/, lanczos/
see them) only through their interface headers (INTERFACES below): the eigensolvers' request,
subspace algebra, column blocks and thick-restart Lanczos; the dense factorizations, their tile
matrix and execution; the sparse LU, shift-invert, Green's function and the distributed LU. Their
kernel contracts (dense/dense_kernels.hpp, sparse_direct/update_kernels.hpp) and other internals
(dense/tuning.hpp, sparse_direct/ordering.hpp) are included only inside their own folder and
by the backends that implement a contract (numerics/cpu, numerics/cuda, numerics/reference)."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
SOURCES = {".hpp", ".cpp", ".h", ".cu", ".cuh"}

# What no file of topokpm_numerics may include: the libraries built on top of it, and MPI.
ABOVE_NUMERICS = ["numerics/distributed/", "numerics/sparse_direct/", "numerics/dense/block_cyclic",
                  "runtime/mpi/", "runtime/hetero/", "hamiltonians/", "analysis/", "app/"]
BACKENDS = ["numerics/cpu/", "numerics/reference/", "numerics/cuda/"]
# Storage formats, the kernel contracts, the operators built on them and their factory.
KERNEL_LAYER = ["numerics/sparse/", "numerics/spmmv/"]
# numerics/base headers with no .cpp of their own: usable without linking topokpm_numerics.
header_only_base = sorted(f"numerics/base/{p.name}" for p in (root / "numerics/base").glob("*.hpp")
                          if not p.with_suffix(".cpp").exists())
NUMERICS_FOLDERS = ["base", "sparse", "spmmv", "cpu", "reference", "kpm", "lanczos", "eigs",
                    "dense", "distributed", "sparse_direct"]

# (folder, files of it the rule covers, forbidden prefixes, allowed exceptions to them)
rules = [
    ("runtime", None, ["numerics/", "hamiltonians/", "analysis/", "app/"], []),
    ("numerics", None, ["hamiltonians/", "analysis/", "app/"], []),
    ("hamiltonians", None, ["analysis/", "app/"] + BACKENDS, []),
    ("analysis", None, ["hamiltonians/", "app/", "numerics/sparse/", "numerics/spmmv/", "numerics/kpm/",
                        "numerics/lanczos/", "numerics/eigs/", "numerics/dense/", "numerics/sparse_direct/",
                        "numerics/distributed/"] + BACKENDS, []),
    ("app/cli", None, ["app/run/", "app/mpi/", "app/checkpoint/", "app/plan/"], []),
    ("app/mpi", None, ["app/run/", "app/checkpoint/", "app/plan/"], []),
    ("app/checkpoint", None, ["app/run/", "app/mpi/", "app/plan/"], []),
    ("app/plan", None, ["app/run/", "app/mpi/"], []),  # checkpoint: the file size the plan prices
]
for sub in ["base", "sparse", "spmmv", "cpu", "reference", "kpm", "lanczos", "eigs"]:
    rules.append((f"numerics/{sub}", None, ABOVE_NUMERICS, []))
for sub in ["kpm", "lanczos", "eigs"]:
    rules.append((f"numerics/{sub}", None, BACKENDS + KERNEL_LAYER, []))
rules += [
    # topokpm_dense links neither topokpm_numerics nor MPI.
    ("numerics/dense", lambda p: not p.name.startswith("block_cyclic"),
     [f"numerics/{f}/" for f in NUMERICS_FOLDERS if f != "dense"] + ["numerics/dense/block_cyclic",
      "runtime/mpi/", "runtime/hetero/", "hamiltonians/", "analysis/", "app/"], header_only_base),
    ("numerics/dense", lambda p: p.name.startswith("block_cyclic"),
     [f"numerics/{f}/" for f in NUMERICS_FOLDERS if f != "dense"] + ["runtime/hetero/", "hamiltonians/",
      "analysis/", "app/"], header_only_base),
    # topokpm_sparse_direct: all of topokpm_numerics and the task runtime; MPI only in distributed_lu.
    ("numerics/sparse_direct", lambda p: not p.name.startswith("distributed_lu"),
     ["numerics/distributed/", "numerics/dense/block_cyclic", "runtime/mpi/", "runtime/hetero/",
      "hamiltonians/", "analysis/", "app/"], []),
    ("numerics/sparse_direct", lambda p: p.name.startswith("distributed_lu"),
     ["numerics/distributed/", "runtime/hetero/", "hamiltonians/", "analysis/", "app/"], []),
]

include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
violations = []

# (folder, the headers of it that its sibling libraries may include); everything else of the
# folder is internal to it (module docstring).
INTERFACES = [
    ("numerics/eigs/", ["eigenpairs.hpp", "subspace.hpp", "columns.hpp", "thick_restart_lanczos.hpp"]),
    ("numerics/dense/", ["cholesky.hpp", "qr.hpp", "tall_skinny.hpp", "tile_matrix.hpp", "execution.hpp",
                         "block_cyclic.hpp"]),
    ("numerics/sparse_direct/", ["sparse_lu.hpp", "shift_invert.hpp", "green.hpp", "distributed_lu.hpp"]),
]
SIBLINGS = ["numerics/eigs", "numerics/dense", "numerics/sparse_direct", "numerics/kpm", "numerics/lanczos"]
# Internal headers every production folder may include only from inside (or as listed).
INTERNALS = {
    "numerics/dense/dense_kernels.hpp": BACKENDS,
    "numerics/dense/tuning.hpp": [],
    "numerics/sparse_direct/update_kernels.hpp": BACKENDS,
    "numerics/sparse_direct/ordering.hpp": [],
}
PRODUCTION = ["runtime", "numerics", "hamiltonians", "analysis", "app"]


def includes(path):
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        m = include.match(line)
        if m:
            yield lineno, m.group(1)


def sources(folder):
    return (p for p in sorted((root / folder).rglob("*")) if p.suffix in SOURCES)


for sibling in SIBLINGS:
    for path in sources(sibling):
        for lineno, header in includes(path):
            for folder, public in INTERFACES:
                if (header.startswith(folder) and not (sibling + "/").startswith(folder)
                        and header[len(folder):] not in public):
                    violations.append(f"{path.relative_to(root)}:{lineno}: includes {header}, not an interface "
                                      f"header of {folder} ({sibling})")
for top in PRODUCTION:
    for path in sources(top):
        rel = str(path.relative_to(root))
        for lineno, header in includes(path):
            if header in INTERNALS:
                owner = header.rsplit("/", 1)[0] + "/"
                if not rel.startswith(owner) and not any(rel.startswith(b) for b in INTERNALS[header]):
                    violations.append(f"{rel}:{lineno}: includes {header}, internal to {owner}")

for folder, covers, bad, allowed in rules:
    for path in sorted((root / folder).rglob("*")):
        if path.suffix not in SOURCES or (covers is not None and not covers(path)):
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = include.match(line)
            if m and m.group(1) not in allowed and any(m.group(1).startswith(b) for b in bad):
                violations.append(f"{path.relative_to(root)}:{lineno}: includes {m.group(1)} ({folder})")
for folder in ["runtime", "numerics/kpm", "numerics/lanczos", "numerics/eigs", "numerics/dense",
               "numerics/sparse_direct"]:
    if not any(p.suffix in SOURCES for p in (root / folder).rglob("*")):
        violations.append(f"{folder}: no sources found (wrong root {root}?)")
if violations:
    print("layering violations:\n  " + "\n  ".join(sorted(set(violations))))
    sys.exit(1)
print(f"layering: no violations ({len(rules)} rules, {len(INTERFACES)} interfaces, {len(INTERNALS)} internal headers)")
