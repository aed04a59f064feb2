"""Independent checks of kpm-eigs result files (models.md §6) with h5py and numpy.

usage: check_eigs.py RESULT.h5 [--matrix M.mtx] [--same-as OTHER.h5] [--surface-min W]
  - the schema: /eigs attributes, values ascending, residuals <= tolerance * energy_scale,
    weights [k, parts] with rows summing to 1, /model and /provenance present;
  - --matrix: the Matrix Market export of kpm-dos (same model): numpy's eigvalsh of it is
    the reference; every returned value is within its residual (+ 1e-10) of the reference
    value of the same rank in the selection (window, lowest, highest); vectors (if saved)
    satisfy ||H v - lambda v|| <= residual + 1e-12 and V^H V = I to 1e-10;
  - --same-as: the values equal those of another run to 1e-9 (relative to the scale);
  - --surface-min W: every pair has at least W of its weight on the first and last layer.
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


def main(argv):
    path = argv[1]
    opts = dict(zip(argv[2::2], argv[3::2]))
    f = h5py.File(path, "r")
    e = f["/eigs"]
    a = e.attrs
    for key in ("method", "request", "window_min", "window_max", "shift", "num_requested", "num_found",
                "tolerance", "num_matvecs", "iterations", "filter_degree"):
        expect(key in a, f"/eigs attribute {key} missing")
    expect("/model" in f and "/provenance" in f, "/model or /provenance missing")
    values = e["values"][()]
    residuals = e["residuals"][()]
    k = len(values)
    expect(a["num_found"] == k, "num_found != len(values)")
    expect(np.all(np.diff(values) >= 0), "values not ascending")
    expect(np.all(residuals <= a["tolerance_absolute"]), f"residuals {residuals.max() if k else 0} above the tolerance")
    wname = "layer_weight" if f["/model"].attrs["name"] == "ti" else "sublattice_weight"
    w = e[wname][()]
    expect(w.shape[0] == k, f"{wname} has {w.shape[0]} rows for {k} pairs")
    expect(k == 0 or np.allclose(w.sum(axis=1), 1.0, atol=1e-10), f"{wname} rows do not sum to 1")
    if "--surface-min" in opts and k:
        surface = w[:, 0] + w[:, -1]
        expect(np.all(surface >= float(opts["--surface-min"])), f"surface weights {surface} below {opts['--surface-min']}")
    if "--matrix" in opts:
        h = read_mtx(opts["--matrix"])
        ref = np.linalg.eigvalsh(h)
        req = a["request"]
        if isinstance(req, bytes):
            req = req.decode()
        if req == "window":
            want = ref[(ref >= a["window_min"]) & (ref <= a["window_max"])]
        elif req == "lowest":
            want = ref[:k]
        elif req == "highest":
            want = ref[len(ref) - k:]
        else:
            want = ref[np.sort(np.argsort(np.abs(ref - a["shift"]), kind="stable")[:k])]
        expect(len(want) == k, f"{k} values, the reference selects {len(want)}")
        if len(want) == k:
            expect(np.all(np.abs(values - want) <= residuals + 1e-10), f"values {values} differ from numpy {want}")
        if "vectors" in e:
            v = e["vectors"][()]
            expect(v.dtype == np.complex128 and v.shape == (k, h.shape[0]), f"vectors dtype {v.dtype} shape {v.shape}")
            r = np.linalg.norm(h @ v.T - v.T * values, axis=0)
            expect(np.all(r <= residuals + 1e-12), f"||H v - lambda v|| {r} above the stored residuals")
            expect(np.allclose(v.conj() @ v.T, np.eye(k), atol=1e-10), "vectors not orthonormal")
    if "--same-as" in opts:
        other = h5py.File(opts["--same-as"], "r")["/eigs/values"][()]
        scale = max(1.0, float(a["energy_scale"]))
        expect(len(other) == k and np.allclose(values, other, atol=1e-9 * scale, rtol=0), f"values {values} != {other}")
    if failures:
        print("\n".join("FAIL: " + x for x in failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
