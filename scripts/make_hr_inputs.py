#!/usr/bin/env python3
"""Writes inputs/graphene_hr.dat and inputs/ti_hr.dat: the built-in models of models.md
§3 (graphene, t = 1) and §2 (ti, t = 1, m = 2) as Wannier90 _hr.dat files, straight from the
spec's definitions (models.md §8), for `kpm-dos --model hr --model-file ...`.

  graphene: 2 orbitals (A = 1, B = 2); H(R)[A, B] = -t for R in {(0,0,0), (1,-1,0), (0,-1,0)}
            and the Hermitian partners H(-R)[B, A] = -t.
  ti:       4 orbitals o = 2 tau + s; H(0) = m G1, H(-e_j) = T_j, H(+e_j) = T_j^dagger with
            T_j = -t (G1 - i G_{j+1}) / 2 and the Dirac matrices of §2.

Every ndegen(R) is 1. Usage: scripts/make_hr_inputs.py [OUTPUT_DIR] (default: inputs/).
"""
import os
import sys


def kron(a, b):
    """(A (x) B)[2 tau + s, 2 tau' + s'] = A[tau, tau'] B[s, s']."""
    return [[a[i // 2][j // 2] * b[i % 2][j % 2] for j in range(4)] for i in range(4)]


S0 = [[1, 0], [0, 1]]
SX = [[0, 1], [1, 0]]
SY = [[0, -1j], [1j, 0]]
SZ = [[1, 0], [0, -1]]
G = [kron(S0, S0), kron(SZ, S0), kron(SX, SX), kron(SX, SY), kron(SX, SZ)]


def write_hr(path, comment, num_wann, blocks):
    """blocks: {R: W x W nested list of complex}, each R written with all W^2 entries."""
    rs = list(blocks)
    with open(path, "w") as f:
        f.write(comment + "\n")
        f.write("%12d\n%12d\n" % (num_wann, len(rs)))
        for i in range(0, len(rs), 15):
            f.write("".join("%5d" % 1 for _ in rs[i:i + 15]) + "\n")
        for r in rs:
            h = blocks[r]
            for n in range(num_wann):          # Wannier90's order: n outer, m inner
                for m in range(num_wann):
                    v = complex(h[m][n])
                    f.write("%5d%5d%5d%5d%5d%12.6f%12.6f\n" % (r[0], r[1], r[2], m + 1, n + 1, v.real, v.imag))


def graphene(t=1.0):
    zero = lambda: [[0.0, 0.0], [0.0, 0.0]]
    blocks = {}
    for r in [(0, 0, 0), (1, -1, 0), (-1, 1, 0), (0, -1, 0), (0, 1, 0)]:
        blocks[r] = zero()
    for r in [(0, 0, 0), (1, -1, 0), (0, -1, 0)]:
        blocks[r][0][1] = -t                                  # H(R)[A, B]
        minus = (-r[0], -r[1], -r[2])
        blocks[minus][1][0] = -t                              # H(-R)[B, A] = conj(H(R)[A, B])
    return blocks


def ti(t=1.0, m=2.0):
    blocks = {(0, 0, 0): [[m * G[1][a][b] for b in range(4)] for a in range(4)]}
    for j in (1, 2, 3):
        tj = [[-t * (G[1][a][b] - 1j * G[j + 1][a][b]) / 2 for b in range(4)] for a in range(4)]
        e = tuple(1 if d == j - 1 else 0 for d in range(3))
        blocks[tuple(-x for x in e)] = tj                                                  # H(-e_j) = T_j
        blocks[e] = [[complex(tj[b][a]).conjugate() for b in range(4)] for a in range(4)]   # H(+e_j) = T_j^dagger
    return blocks


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inputs")
    write_hr(os.path.join(out, "graphene_hr.dat"), " graphene of models.md section 3, t = 1 (scripts/make_hr_inputs.py)", 2,
             graphene())
    write_hr(os.path.join(out, "ti_hr.dat"), " ti of models.md section 2, t = 1, m = 2 (scripts/make_hr_inputs.py)", 4, ti())


if __name__ == "__main__":
    main()
