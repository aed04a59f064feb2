#!/usr/bin/env python3
"""docs/format.md against real files: every group, dataset and attribute of the given HDF5
files is named in docs/format.md, every dataset the document lists in a table row exists in
one of the files (except the few that need mpirun or a later realization, EXEMPT), and a
listed dataset's type (float64, int64, uint64, complex128) is the file's. In a result file
(not a checkpoint) every group but the root and every dataset carries non-empty string
attributes `unit` and `description`, and its `unit` is the one docs/format.md gives it (the
`unit` column of the group and dataset tables); an object the document gives no unit fails.

usage: format_doc_check.py docs/format.md FILE.h5 ..."""
import re
import sys

import h5py

EXEMPT = {  # listed in docs/format.md, not produced by the serial runs of format_doc_test.sh
    "/checkpoint/finished": "written once a realization has finished",
    "/checkpoint/rank_sums": "under mpirun with partial dot sums only",
    "/checkpoint/block/rank_raw": "under mpirun with partial dot sums only",
    "/checkpoint/conductivity": "a run stopped in its --conductivity phase (kpm_conductivity_checkpoint)",
    "/checkpoint/conductivity/left": "a run stopped in a left pass of --conductivity (kpm_conductivity_checkpoint)",
    "/checkpoint/conductivity/sums": "a run stopped in its --conductivity phase (kpm_conductivity_checkpoint)",
    "/checkpoint/conductivity/left/current": "a run stopped in a left pass of --conductivity (kpm_conductivity_checkpoint)",
    "/checkpoint/conductivity/left/previous": "a run stopped in a left pass of --conductivity (kpm_conductivity_checkpoint)",
    "/checkpoint/conductivity/left/raw": "a run stopped in a left pass of --conductivity (kpm_conductivity_checkpoint)",
    "/checkpoint/conductivity/rank_sums": "--conductivity stopped under mpirun (kpm_dos_mpi_conductivity_checkpoint)",
    "/checkpoint/conductivity/left/rank_raw": "--conductivity stopped in a left pass under mpirun "
                                              "(kpm_dos_mpi_conductivity_checkpoint)",
}

TYPES = {"float64", "int64", "uint64", "complex128"}
doc_path, files = sys.argv[1], sys.argv[2:]
doc = open(doc_path, encoding="utf-8").read()
documented_names = set(re.findall(r"`([^`\s]+)`", doc))
# Table rows that start with dataset paths: "| `/a/b`, `/a/c` (note) | float64 [..] | ..."
listed = {}
for line in doc.splitlines():
    m = re.match(r"\|\s*((?:`/[^`]+`[^|]*?)+)\|\s*([a-z0-9]+)?", line)
    if not m:
        continue
    for path in re.findall(r"`(/[^`]+)`", m.group(1)):
        if listed.get(path) not in TYPES:  # a later "as above" row keeps the first row's type
            listed[path] = m.group(2)

# The `unit` column of tables whose header has one: "| `/a`, `/b` | ... | `1/t`, `1` | ...".
doc_units = {}
unit_column = None
for line in doc.splitlines():
    line = line.strip()
    if not line.startswith("|"):
        unit_column = None
        continue
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    if "unit" in cells and cells[0] in ("dataset", "group"):
        unit_column = cells.index("unit")
        continue
    paths = re.findall(r"`(/[^`]+)`", cells[0]) if cells else []
    if unit_column is None or not paths or unit_column >= len(cells) or cells[unit_column] == "as above":
        continue
    units = re.findall(r"`([^`]+)`", cells[unit_column])
    if len(units) == 1:
        units = units * len(paths)
    if len(units) != len(paths):
        sys.exit(f"{doc_path}: the row of {', '.join(paths)} gives {len(units)} units for {len(paths)} names")
    for path, unit in zip(paths, units):
        doc_units.setdefault(path, unit)

problems = []
present = {}
described = 0
for fn in files:
    with h5py.File(fn, "r") as f:
        is_result = "checkpoint" not in f

        def visit(name, obj):
            global described
            path = "/" + name
            if is_result:
                for key in ("unit", "description"):
                    value = obj.attrs.get(key)
                    if not isinstance(value, str) or not value:
                        problems.append(f"{fn}: {path} has no {key} attribute (a non-empty string)")
                unit = obj.attrs.get("unit")
                if path not in doc_units:
                    problems.append(f"{fn}: {doc_path} gives no unit for {path}")
                elif isinstance(unit, str) and unit != doc_units[path]:
                    problems.append(f"{fn}: {path} has unit '{unit}', {doc_path} says '{doc_units[path]}'")
                else:
                    described += 1
            base = name.split("/")[-1]
            if path not in documented_names and base not in documented_names:
                problems.append(f"{fn}: {path} is not in {doc_path}")
            present[path] = str(obj.dtype) if isinstance(obj, h5py.Dataset) else "group"
            for key in obj.attrs:
                # the phase times are listed as `seconds_build`, `_bounds`, ...
                phase = "_" + key[len("seconds_"):] if key.startswith("seconds_") else None
                if key not in documented_names and phase not in documented_names:
                    problems.append(f"{fn}: attribute {key} of {path} is not in {doc_path}")
        f.visititems(visit)

for path, dtype in sorted(listed.items()):
    if path in EXEMPT:
        continue
    if path not in present:
        problems.append(f"{doc_path} lists {path}, which no file has")
    elif dtype in TYPES and present[path] != dtype:
        problems.append(f"{doc_path} says {path} is {dtype}, the file has {present[path]}")

if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"format.md: {len(present)} groups and datasets in {len(files)} files documented, {len(listed)} listed paths found, "
      f"{described} result objects carry the documented unit and a description")
