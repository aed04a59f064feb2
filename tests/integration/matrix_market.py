"""The dense H of a kpm-dos --export-matrix file (complex Matrix Market, 1-based, every stored
entry; repeated entries are summed), the numpy reference the check_*.py scripts diagonalize."""
import numpy as np


def read_mtx(path):
    with open(path) as f:
        header = f.readline()
        assert "complex" in header, f"{path}: not a complex Matrix Market file"
        line = f.readline()
        while line.startswith("%"):
            line = f.readline()
        n, _, nnz = (int(v) for v in line.split())
        h = np.zeros((n, n), dtype=complex)
        for _ in range(nnz):
            i, j, re, im = f.readline().split()
            h[int(i) - 1, int(j) - 1] += complex(float(re), float(im))
    return h
