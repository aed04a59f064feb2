#!/usr/bin/env python3
"""Where the --ldos-method probing error of a layer map comes from, and what the same probing
vectors give with a Nystrom estimate (docs/physics.md, "Probing"). Not part of the program:
a measurement, in numpy/scipy, of both estimators at any energies (the program computes the
Nystrom map at its --ldos-map-energy only) against the exact run's moments.

Inputs, from kpm-dos (ti lattice, layer selection):
  exact run:  kpm-dos ... --ldos layer:Z --moments M -o exact.h5 --matrix sell --export-matrix H.mtx
Then:
  /usr/bin/python3 bench/ldos_probing_estimators.py H.mtx exact.h5 --lattice 32x32x8 --layer 0 \\
      --distance 6 --energies 0.6,1.5,-1

For the probing vectors V (the program's colouring: rows of one colour >= distance hops apart
per direction, one random-phase vector per colour) it runs the Chebyshev recurrence once
and keeps, per map energy E, the kernel-filtered block F = f_E(H) V at the layer rows,
f_E(H) = sum_n h_n T_n(H~) with h_n the reconstruction weights of rho(E) (Jackson). Then:
  probing  rho_i = Re(conj(s_i) F[i, colour(i)])            (what --ldos-method probing does)
  nystrom  rho_i = F_i (V^H F)^+ F_i^H                       (f_E restricted to the layer is
           positive semidefinite; its Nystrom approximation from the same sketch V is exact
           when V spans its range, and never above the true diagonal)
and the rms of each map's difference to the exact map (from exact.h5's moments) over its mean.
"""
import argparse
import numpy as np
import h5py
import scipy.io
import scipy.sparse as sp


def colour_classes(extent, distance):
    """Per-site class in one periodic direction, as numerics/kpm/probing.cpp deals them."""
    spacing = min(distance, extent)
    chunks = max(1, extent // spacing)
    starts = [k * extent // chunks for k in range(chunks)]
    offset = np.array([x - max(s for s in starts if s <= x) for x in range(extent)])
    return offset, (extent + chunks - 1) // chunks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('matrix'); ap.add_argument('exact')
    ap.add_argument('--lattice', default='32x32x8'); ap.add_argument('--layer', type=int, default=0)
    ap.add_argument('--distance', type=int, default=6); ap.add_argument('--energies', default='0.6')
    ap.add_argument('--seed', type=int, default=1)
    o = ap.parse_args()
    nx, ny, nz = (int(v) for v in o.lattice.split('x'))
    orbitals = 4
    energies = [float(e) for e in o.energies.split(',')]
    f = h5py.File(o.exact, 'r')
    a, b = f['/kpm'].attrs['scale_a'], f['/kpm'].attrs['scale_b']
    moments = f['/ldos/moments'][:]
    m = moments.shape[1]
    h = scipy.io.mmread(o.matrix).tocsr().astype(complex)
    n_rows = h.shape[0]
    ht = ((h - b * sp.identity(n_rows)) / a).tocsr()
    rows = np.array([q + orbitals * (o.layer + nz * (y + ny * x)) for x in range(nx) for y in range(ny) for q in range(orbitals)])
    offx, cx = colour_classes(nx, o.distance)
    offy, _ = colour_classes(ny, o.distance)
    colour = np.array([q + orbitals * (offx[x] + cx * offy[y]) for x in range(nx) for y in range(ny) for q in range(orbitals)])
    colours = colour.max() + 1
    n = np.arange(m)
    g = ((m - n + 1) * np.cos(np.pi * n / (m + 1)) + np.sin(np.pi * n / (m + 1)) / np.tan(np.pi / (m + 1))) / (m + 1)
    x0 = [(e - b) / a for e in energies]
    weights = [g * np.cos(n * np.arccos(x)) * np.where(n == 0, 1.0, 2.0) / (np.pi * a * np.sqrt(1 - x * x)) for x in x0]
    phases = np.exp(2j * np.pi * np.random.default_rng(o.seed).random(len(rows)))
    v = np.zeros((n_rows, colours), complex)
    v[rows, colour] = phases
    filtered = [w[0] * v[rows] for w in weights]
    v_prev, v_cur = v, ht @ v
    for k in range(1, m):
        if k >= 2:
            v_prev, v_cur = v_cur, 2 * (ht @ v_cur) - v_prev
        at_rows = v_cur[rows]
        for fe, w in zip(filtered, weights):
            fe += w[k] * at_rows
    sketch = v[rows]
    site_map = lambda d: d.reshape(nx, ny, orbitals).sum(axis=2)
    i = np.arange(len(rows))
    print(f'{o.lattice} layer {o.layer}, M = {m}, distance {o.distance}: {colours} probing vectors for {len(rows)} rows')
    for e, w, fe in zip(energies, weights, filtered):
        exact = site_map(moments @ w)
        rms = lambda d: np.sqrt(np.mean((site_map(d) - exact) ** 2)) / exact.mean()
        probing = np.real(np.conj(phases) * fe[i, colour])
        small = sketch.conj().T @ fe
        ev, u = np.linalg.eigh((small + small.conj().T) / 2)
        keep = ev > 1e-10 * ev.max()
        nystrom = np.sum(np.abs(fe @ u[:, keep] / np.sqrt(ev[keep])) ** 2, axis=1)
        print(f'E = {e:+.3f} t: mean map {exact.mean():.4g} 1/t; rms/mean probing {rms(probing):.4f}, '
              f'nystrom {rms(nystrom):.4f} (eigenvalues of V^H F above 1e-3 of the largest: '
              f'{int((ev > 1e-3 * ev.max()).sum())} of {colours})')


if __name__ == '__main__':
    main()
