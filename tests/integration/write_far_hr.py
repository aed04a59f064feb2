"""write_far_hr.py OUT: a complex 3-orbital Wannier90 _hr.dat (models.md §8) whose hoppings
reach two cells in x and y and leave the z layer ((2,0,0), (1,-1,1), (0,2,-1), ...), Hermitian by
construction (each R block has its -R partner as the conjugate transpose; the R = 0 block is
Hermitian), values rounded to the file's 6 decimals. Seeded: the same file every time. Used
by file_models_test.sh and file_models_paths_test.sh."""
import random
import sys

random.seed(4)
w, blocks = 3, {}
for r in [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (2, 0, 0), (1, -1, 1), (0, 2, -1), (1, 1, 0)]:
    b = [[complex(round(random.uniform(-1, 1), 6), round(random.uniform(-1, 1), 6)) for n in range(w)] for m in range(w)]
    if r == (0, 0, 0):
        b = [[b[m][n] if m < n else (b[n][m].conjugate() if m > n else complex(b[m][m].real, 0)) for n in range(w)]
             for m in range(w)]
    else:
        blocks[tuple(-x for x in r)] = [[b[n][m].conjugate() for n in range(w)] for m in range(w)]
    blocks[r] = b
with open(sys.argv[1], "w") as f:
    f.write("far hoppings\n%d\n%d\n%s\n" % (w, len(blocks), " ".join("1" for _ in blocks)))
    for r, b in blocks.items():
        for n in range(w):
            for m in range(w):
                f.write("%d %d %d %d %d %.6f %.6f\n" % (r + (m + 1, n + 1, b[m][n].real, b[m][n].imag)))
