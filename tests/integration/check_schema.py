#!/usr/bin/env python3
"""Independent check of a kpm-dos result file against models.md §5 with h5py."""
import sys

import h5py
import numpy as np

f = h5py.File(sys.argv[1], "r")
errors = []


def need(cond, what):
    if not cond:
        errors.append(what)


model = f["/model"].attrs
for key in ["name", "Nx", "Ny", "Nz", "t", "dot_potential", "dot_radius", "dot_period",
            "disorder", "disorder_seed", "boundary"]:
    need(key in model, f"/model@{key}")
need(model["disorder_seed"].dtype == np.uint64, "disorder_seed is uint64")
need(isinstance(model["name"], str), "/model@name is a string")
kpm = f["/kpm"].attrs
for key in ["scale_a", "scale_b", "num_moments", "num_vectors", "vector_seed", "num_rows", "trace"]:
    need(key in kpm, f"/kpm@{key}")
need(kpm["vector_seed"].dtype == np.uint64, "vector_seed is uint64")
m = int(kpm["num_moments"])
mu = f["/kpm/moments"][...]
need(mu.dtype == np.float64 and mu.shape == (m,), "/kpm/moments float64 [M]")
need(abs(mu[0] - 1) < 1e-12, "mu_0 = 1")
if "/kpm/moments_per_vector" in f:
    pv = f["/kpm/moments_per_vector"][...]
    need(pv.shape == (int(kpm["num_vectors"]), m), "moments_per_vector [R, M]")
    need(np.allclose(pv.mean(axis=0), mu, atol=1e-14), "per-vector moments average to the moments")
e = f["/dos/energy"][...]
rho = f["/dos/rho"][...]
need(e.dtype == np.float64 and e.shape == rho.shape, "/dos/energy and /dos/rho float64 [K]")
need(np.all(np.diff(e) > 0), "energies ascending")
need("kernel" in f["/dos"].attrs and "lorentz_lambda" in f["/dos"].attrs, "/dos attributes")
prov = f["/provenance"].attrs
for key in ["program_version", "git_revision", "command_line", "input_file_text", "ranks",
            "threads_per_rank", "devices", "start_time", "end_time"]:
    need(key in prov, f"/provenance@{key}")
if errors:
    print("schema errors:", *errors, sep="\n  ")
    sys.exit(1)
print("schema ok")
