"""Independent checks of kpm-dos --green result files (models.md §7) with h5py and numpy.

usage: check_green.py RESULT.h5 MATRIX.mtx [--kpm-bound]
  - schema: /green/rows equals /ldos/rows, /green/energy equals /ldos/energy, /green/rho
    [nr, K], attribute eta > 0;
  - exactness: with numpy's eigh of the kpm-dos Matrix Market export (H = sum_n E_n |n><n|),
        rho_j(E) = sum_n |<j|n>|^2 (eta / pi) / ((E - E_n)^2 + eta^2),
    and /green/rho must equal it to 1e-10 of the peak height 1/(pi eta): both sides are
    backward-stable solves / eigensolves of an O(1)-conditioned problem (distance >= eta
    from the poles, so ||(H - z)^-1|| <= 1/eta) and the rounding is O(n eps ||H|| / eta)
    relative, far below 1e-10 for n <= 10^3;
  - --kpm-bound (Lorentz-kernel KPM run with unit-vector LDOS): with the weights
    w_n = |<j|n>|^2 >= 0 summing to 1, both LDOS are averages of kernels over the same
    spectral measure, rho_G(E) = sum_n w_n L(E - E_n) and rho_K(E) = sum_n w_n K(E, E_n),
    so |rho_G(E) - rho_K(E)| <= sup_{E'} |L(E - E') - K(E, E')| =: B(E), where L is the
    Lorentzian of width eta and K the Lorentz-kernel KPM kernel with the file's M, lambda,
    a, b. B is evaluated here on a grid of E' over the scaled interval [b - a, b + a] with
    spacing h = eta / 100 plus h times the largest slope of the difference seen on the
    grid (the sampling error of a sup). The check: |rho_G - rho_K| <= B + 1e-9 at every E
    and row. It uses no eigenpairs, so it tests the pipeline (grid, scaling, normalisation,
    sign of Im G) independently of the exact check.
Prints 'ok' or the failures and exits 1.
"""
import sys

import h5py
import numpy as np

from matrix_market import read_mtx

failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)


def lorentz_kpm_kernel(energy, eprime, m, lam, a, b):
    """K(E, E') = [g_0 + 2 sum_{n>=1} g_n T_n(x) T_n(x')] / (a pi sqrt(1 - x^2))."""
    x = (energy - b) / a
    xp = (eprime - b) / a
    n = np.arange(m)
    g = np.sinh(lam * (1.0 - n / m)) / np.sinh(lam)
    tx = np.cos(np.outer(n, np.arccos(x)))    # [m, K]
    txp = np.cos(np.outer(n, np.arccos(xp)))  # [m, K']
    c = g.copy()
    c[1:] *= 2.0
    return (tx * c[:, None]).T @ txp / (a * np.pi * np.sqrt(1.0 - x * x))[:, None]


def main(argv):
    path, mtx = argv[1], argv[2]
    f = h5py.File(path, "r")
    expect("/green" in f, "/green missing")
    if failures:
        return
    rows = f["/green/rows"][()]
    energy = f["/green/energy"][()]
    rho = f["/green/rho"][()]
    eta = float(f["/green"].attrs["eta"])
    expect(eta > 0, f"eta {eta}")
    expect(np.array_equal(rows, f["/ldos/rows"][()]), "/green/rows differs from /ldos/rows")
    expect(np.array_equal(energy, f["/ldos/energy"][()]), "/green/energy differs from /ldos/energy")
    expect(rho.shape == (len(rows), len(energy)), f"/green/rho shape {rho.shape}")
    h = read_mtx(mtx)
    e, v = np.linalg.eigh(h)
    w = np.abs(v[rows, :]) ** 2  # [nr, n]
    ref = w @ ((eta / np.pi) / ((energy[None, :] - e[:, None]) ** 2 + eta ** 2))
    peak = 1.0 / (np.pi * eta)
    err = np.abs(rho - ref).max() / peak
    expect(err <= 1e-10, f"/green/rho differs from the eigen-decomposition sum by {err:.2e} of the peak")
    expect(rho.min() >= -1e-12 * peak, "negative rho")
    if "--kpm-bound" in argv:
        kpm = f["/kpm"].attrs
        a, b, m = float(kpm["scale_a"]), float(kpm["scale_b"]), int(kpm["num_moments"])
        lam = float(f["/dos"].attrs["lorentz_lambda"])
        expect(f["/dos"].attrs["kernel"] in ("lorentz", b"lorentz"), "--kpm-bound needs a Lorentz-kernel run")
        step = eta / 100.0
        eprime = np.arange(b - a + step, b + a - step / 2, step)
        kern = lorentz_kpm_kernel(energy, eprime, m, lam, a, b)
        lor = (eta / np.pi) / ((energy[:, None] - eprime[None, :]) ** 2 + eta ** 2)
        diff = np.abs(lor - kern)
        slope = np.abs(np.diff(lor - kern, axis=1)).max(axis=1) / step
        bound = diff.max(axis=1) + step * slope  # [K]
        gap = np.abs(rho - f["/ldos/rho"][()])
        worst = (gap - bound[None, :]).max()
        expect(worst <= 1e-9, f"|rho_green - rho_kpm| exceeds the kernel bound by {worst:.3e}")
        print(f"kpm bound: max |rho_G - rho_K| = {gap.max():.4f}, bound at that point "
              f"{bound[np.unravel_index(gap.argmax(), gap.shape)[1]]:.4f}, peak 1/(pi eta) = {peak:.3f}")
    print(f"exact: max error {err:.2e} of the peak, {len(rows)} rows x {len(energy)} energies")


if __name__ == "__main__":
    main(sys.argv)
    if failures:
        print("\n".join("FAIL: " + s for s in failures))
        sys.exit(1)
    print("ok")
