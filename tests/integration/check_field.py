"""Independent checks of kpm-dos result files in a magnetic field (--magnetic-flux, models.md §9)
with h5py and numpy.

usage: check_field.py RESULT.h5 PHI [--matrix M.mtx] [--landau]
  - /model records the field: magnetic_flux = PHI (a fraction p/q, compared to 1e-15),
    magnetic_flux_fraction = "p/q" as given (reduced), gauge naming the Landau gauge;
  - --matrix (the same run's --export-matrix, and --trace exact): the exported matrix is exactly
    Hermitian and complex (the Peierls phases), and /kpm/moments equal the exact moments
    (1/N) sum_i T_n((E_i - b)/a) of numpy's eigvalsh of it to 1e-10 (both are rounding-level
    sums of O(1) terms; the recurrence's error grows ~ n eps);
  - --landau (clean graphene, PHI = 1/q): the DOS shows the Landau levels. Its maximum within
    E_1/2 of 0 lies within the kernel's resolution of 0, and the weight there is the n = 0
    level's 2 N_phi states of 2 Nx Ny, i.e. PHI, within 10 % (16 random vectors: the relative
    standard error of the trace of a projector of rank f N is about sqrt(1/(f N R)) = 2.5 %
    at N = 7200, f = 1/90; 10 % is four of them). The maxima near +-E_1 and +-E_2 lie within the
    resolution of E_n = E_n^cont (1 - (E_n^cont/t)^2 / 12), the continuum levels
    E_n^cont = (3t/2) sqrt(2 n 2 pi PHI / A_cell) with the lattice's second-order Onsager
    correction (docs/physics.md, "Magnetic field"), and within 3 % of E_n^cont itself. The
    resolution of the Jackson kernel: pi a / M (a the scale), plus the next order E^5 / 10.
  - --surface-landau (clean ti slab, m = 2, run with --ldos site:X,Y,0): the LDOS of a top-surface
    site, summed over its 4 orbitals, shows the surface Dirac cone's Landau levels. At m = 2 the
    surface band is E = +-t sqrt(sin^2 kx + sin^2 ky) (a 12-layer slab's equals it to 1e-15 for
    |k| <= 0.3), whose contour encloses S(E) = pi (E/t)^2 [1 + (E/t)^2 / 4 + O(E^4)], so the Onsager
    rule puts the levels at E_n = E_n^cont (1 - (E_n^cont/t)^2 / 8), E_n^cont = t sqrt(2 n 2 pi PHI)
    (A_cell = 1, velocity t). The maxima near 0 and +-E_1 .. +-E_3 lie within the resolution
    pi a / M (plus E^5 / 10) of those.
Prints 'ok' or the failures and exits 1.
"""
import sys
from fractions import Fraction

import h5py
import numpy as np

from matrix_market import read_mtx

path, phi_text = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
matrix = args[args.index("--matrix") + 1] if "--matrix" in args else None
phi = Fraction(phi_text)
bad = []

with h5py.File(path, "r") as f:
    m = f["/model"].attrs
    if abs(float(m.get("magnetic_flux", np.nan)) - float(phi)) > 1e-15:
        bad.append(f"/model magnetic_flux {m.get('magnetic_flux')} != {phi}")
    want_text = str(phi.numerator) if phi.denominator == 1 else f"{phi.numerator}/{phi.denominator}"
    if m.get("magnetic_flux_fraction") != want_text:
        bad.append(f"/model magnetic_flux_fraction {m.get('magnetic_flux_fraction')!r} != {want_text!r}")
    if not str(m.get("gauge", "")).startswith("landau"):
        bad.append(f"/model gauge {m.get('gauge')!r} does not name the Landau gauge")
    k = f["/kpm"].attrs
    a, b = float(k["scale_a"]), float(k["scale_b"])
    surface = "--surface-landau" in args
    mu = f["/ldos/moments"][0] if surface else f["/kpm/moments"][()]
    energy = f["/ldos/energy" if surface else "/dos/energy"][()]
    rho = f["/ldos/rho"][()].sum(axis=0) if surface else f["/dos/rho"][()]
    nx, ny = int(m["Nx"]), int(m["Ny"])

if matrix:
    h = read_mtx(matrix)
    if np.abs(h - h.conj().T).max() != 0.0:
        bad.append("the exported matrix is not exactly Hermitian")
    if np.abs(h.imag).max() == 0.0:
        bad.append("the exported matrix is real: no Peierls phases")
    x = (np.linalg.eigvalsh(h) - b) / a
    t_prev, t_cur = np.ones_like(x), x.copy()
    exact = [1.0, x.mean()]
    for _ in range(2, len(mu)):
        t_prev, t_cur = t_cur, 2 * x * t_cur - t_prev
        exact.append(t_cur.mean())
    err = np.abs(np.array(exact) - mu).max()
    if err > 1e-10:
        bad.append(f"moments differ from the exact ones of the exported matrix by {err:.3g} > 1e-10")

if "--landau" in args:
    resolution = np.pi * a / len(mu)
    a_cell = 3 * np.sqrt(3) / 2
    cont = lambda n: 1.5 * np.sqrt(2 * n * 2 * np.pi * float(phi) / a_cell)
    e1 = cont(1)
    inner = np.abs(energy) < e1 / 2
    e0 = energy[inner][np.argmax(rho[inner])]
    if abs(e0) > resolution:
        bad.append(f"n = 0 peak at {e0:.4g}, not within {resolution:.3g} of 0")
    order = np.argsort(energy)
    es, rs = energy[order], rho[order]
    sel = np.abs(es) < e1 / 2
    weight = np.trapz(rs[sel], es[sel])
    if abs(weight - float(phi)) > 0.1 * float(phi):
        bad.append(f"n = 0 level holds {weight:.4g} of the states, not PHI = {float(phi):.4g} within 10 %")
    for n in (1, 2):
        c = cont(n)
        corrected = c * (1 - c * c / 12)
        lo, hi = (cont(n - 1) + c) / 2 if n > 1 else c / 2, (c + cont(n + 1)) / 2
        for sign in (1, -1):
            window = (sign * energy > lo) & (sign * energy < hi)
            peak = sign * energy[window][np.argmax(rho[window])]
            if abs(peak - corrected) > resolution + c**5 / 10:
                bad.append(f"level {sign * n}: peak at {sign * peak:.5g}, not within {resolution + c**5 / 10:.3g} "
                           f"of {sign * corrected:.5g}")
            if abs(peak / c - 1) > 0.03:
                bad.append(f"level {sign * n}: peak at {sign * peak:.5g}, not within 3 % of the continuum {sign * c:.5g}")
            else:
                print(f"level {sign * n}: peak {sign * peak:.5f} t, continuum {sign * c:.5f} t "
                      f"({100 * (peak / c - 1):+.2f} %), second-order {sign * corrected:.5f} t")
    print(f"level 0: peak {e0:.2g} t, weight {weight:.5f} (PHI = {float(phi):.5f}); resolution {resolution:.4f} t")

if "--surface-landau" in args:
    resolution = np.pi * a / len(mu)
    cont = lambda n: np.sqrt(2 * n * 2 * np.pi * float(phi))
    mid = lambda n: (cont(n) + cont(n + 1)) / 2
    for n in (0, 1, 2, 3):
        c = cont(n)
        corrected = c * (1 - c * c / 8)
        for sign in (1, -1) if n else (1,):
            lo = -mid(0) if n == 0 else mid(n - 1)
            window = (sign * energy > lo) & (sign * energy < mid(n))
            peak = sign * energy[window][np.argmax(rho[window])]
            if abs(peak - corrected) > resolution + c**5 / 10:
                bad.append(f"surface level {sign * n}: peak at {sign * peak:.5g}, not within "
                           f"{resolution + c**5 / 10:.3g} of {sign * corrected:.5g}")
            else:
                print(f"surface level {sign * n}: peak {sign * peak:.5f} t, continuum {sign * c:.5f} t, "
                      f"second-order {sign * corrected:.5f} t (resolution {resolution:.4f} t)")

if bad:
    print("\n".join(bad))
    sys.exit(1)
print("ok")
