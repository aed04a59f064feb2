#!/usr/bin/env python3
"""flip_bit.py SRC DST DATASET INDEX

DST = a copy of the HDF5 file SRC with the lowest bit of the INDEX-th float64 of the
contiguous dataset DATASET flipped in the file's bytes (a silent disk or transfer error),
checked to be exactly that value's change in a file HDF5 still reads. Exit 1 otherwise.
"""
import shutil
import sys

import h5py

src, dst, name, index = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with h5py.File(src, "r") as f:
    d = f[name]
    offset = d.id.get_offset()
    assert offset is not None and d.dtype == "<f8" and index < d.size, (name, offset, d.dtype, d.size)
shutil.copyfile(src, dst)
with open(dst, "r+b") as g:
    g.seek(offset + 8 * index)
    b = g.read(1)
    g.seek(offset + 8 * index)
    g.write(bytes([b[0] ^ 1]))
with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
    x, y = a[name][...].ravel(), b[name][...].ravel()
    changed = [i for i in range(x.size) if x[i].tobytes() != y[i].tobytes()]
    assert changed == [index], changed  # exactly that value, still readable HDF5
