#!/usr/bin/env python3
"""Independent reader for result_file_test: opens the file written by ResultWriter with
h5py and checks that every value has the type and content a Python user expects
(strings as str, seeds as uint64, float64/int64 datasets with their shapes)."""
import sys

import h5py
import numpy as np

errors = []


def need(cond, what):
    if not cond:
        errors.append(what)


with h5py.File(sys.argv[1], "r") as f:
    model = f["/model"].attrs
    need(isinstance(model["name"], str) and model["name"] == "ti", "/model@name is the str 'ti'")
    need(isinstance(model["label"], str) and model["label"] == "\u03c1(E) \u00c5\u00b2", "/model@label UTF-8 str")
    need(isinstance(model["empty"], str) and model["empty"] == "", "/model@empty is ''")
    need(model["t"].dtype == np.float64 and model["t"] == 1.25, "/model@t float64 1.25")
    need(model["Nx"].dtype == np.int64 and model["Nx"] == -7, "/model@Nx int64 -7")
    need(model["disorder_seed"].dtype == np.uint64 and model["disorder_seed"] == 2**64 - 1,
         "/model@disorder_seed uint64 2^64-1")
    need(np.shape(model["t"]) == (), "attributes are scalars")
    need(f.attrs["root_note"] == "on the root", "root attribute")
    need(f["/a/b/c"].attrs["depth"] == 3, "nested group attribute")

    mu = f["/kpm/moments"]
    need(mu.dtype == np.float64 and mu.shape == (5,), "/kpm/moments float64 [5]")
    need(np.array_equal(mu[...], [1.0, -0.5, 0.25, 1e-300, -3.0]), "/kpm/moments values")
    pv = f["/kpm/moments_per_vector"]
    need(pv.dtype == np.float64 and pv.shape == (3, 4), "moments_per_vector float64 [3, 4]")
    need(np.array_equal(pv[...], np.arange(12, dtype=np.float64).reshape(3, 4) * 0.5),
         "moments_per_vector row-major values")
    rows = f["/ldos/rows"]
    need(rows.dtype == np.int64 and rows.shape == (4,), "/ldos/rows int64 [4]")
    need(list(rows[...]) == [0, 5, 2**62, -1], "/ldos/rows values")
    need(f["/kpm"].attrs["num_moments"] == 5, "/kpm@num_moments written after the datasets")

if errors:
    print("h5py check failed:", *errors, sep="\n  ")
    sys.exit(1)
print("h5py check ok")
