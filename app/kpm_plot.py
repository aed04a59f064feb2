#!/usr/bin/python3
"""kpm-plot: draw whatever a kpm-dos result file holds (docs/physics.md).

    kpm-plot RESULT.h5 [-o FILE.png|.svg|.pdf] [--kind dos|ldos|map|spectral] [--dpi N]

  dos       the DOS rho(E) with its error band (+-1 standard error) when the file has one
  ldos      local DOS curves of the selected rows (up to 8, with the mean of all rows)
  map       the real-space LDOS map of a surface layer at one energy (/ldos_map)
  spectral  A(k, E) as a heat map along the momentum path, with the bands when known

Without --kind the richest content is drawn (spectral > map > ldos > dos). Energies are
in units of the hopping t. Uses Debian's /usr/bin/python3 (h5py, numpy, matplotlib):
the `python3` first on PATH may be an interpreter without them.
"""
import argparse
import os
import sys

try:
    import h5py
    import numpy as np
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as exc:  # pragma: no cover - depends on the machine
    sys.exit(f"kpm-plot: needs h5py, numpy and matplotlib ({exc}); on Debian: "
             "apt-get install python3-h5py python3-matplotlib")

# Figure sizes in inches; with the default dpi 100 the PNG is exactly 100x these in pixels.
SIZES = {"dos": (8.0, 5.0), "ldos": (8.0, 5.0), "map": (10.0, 4.5), "spectral": (8.0, 6.0)}
GREEK = {"G": "Γ"}


def title_of(f):
    m = f["/model"].attrs
    name = m["name"]
    lattice = f"{m['Nx']}x{m['Ny']}" + (f"x{m['Nz']}" if name == "ti" else "")
    extra = []
    if name == "ti":
        extra.append(f"m = {m['m']:g}")
    if m.get("dot_period", 0) and m.get("dot_potential", 0):
        extra.append(f"dots V = {m['dot_potential']:g}, P = {m['dot_period']}, r = {m['dot_radius']:g}")
    if m.get("disorder", 0):
        extra.append(f"W = {m['disorder']:g}")
    k = f["/kpm"].attrs
    extra.append(f"M = {k['num_moments']}")
    if k.get("num_realizations", 1) > 1:
        extra.append(f"{k['num_realizations']} realizations")
    return f"{name} {lattice}, " + ", ".join(extra)


def plot_dos(f, ax):
    e, rho = f["/dos/energy"][:], f["/dos/rho"][:]
    ax.plot(e, rho, color="C0", lw=1.2, label="ρ(E)")
    if "/dos/rho_stderr" in f:
        se = f["/dos/rho_stderr"][:]
        what = f["/dos"].attrs.get("stderr_samples", "samples")
        ax.fill_between(e, rho - se, rho + se, color="C0", alpha=0.35, lw=0,
                        label=f"± 1 standard error ({what})")
    ax.set_xlabel("energy E (units of t)")
    ax.set_ylabel("DOS ρ(E) (states per state per t)")
    ax.set_xlim(e[0], e[-1])
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right")


def plot_ldos(f, ax):
    e, rho, rows = f["/ldos/energy"][:], f["/ldos/rho"][:], f["/ldos/rows"][:]
    shown = np.unique(np.linspace(0, len(rows) - 1, min(8, len(rows))).astype(int))
    for i in shown:
        ax.plot(e, rho[i], lw=1.0, label=f"row {rows[i]}")
    if len(rows) > 1:
        ax.plot(e, rho.mean(axis=0), color="k", lw=1.8, label=f"mean of {len(rows)} rows")
    ax.set_xlabel("energy E (units of t)")
    ax.set_ylabel("local DOS ρ_j(E) (1/t)")
    ax.set_xlim(e[0], e[-1])
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize=8)


def plot_map(f, fig):
    attrs = f["/ldos_map"].attrs
    rho = f["/ldos_map/rho"][:]
    energy = attrs["energy"]
    ax_map, ax_curve = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1.0]})
    if attrs.get("model", "ti") == "graphene":
        # cell (m, n) at m a1 + n a2 (plus half a bond to the B site), a1 = (sqrt3, 0), a2 = (sqrt3/2, 3/2)
        m, n = np.meshgrid(np.arange(rho.shape[0]), np.arange(rho.shape[1]), indexing="ij")
        x, y = np.sqrt(3) * m + np.sqrt(3) / 2 * n, 1.5 * n + 0.5
        im = ax_map.scatter(x.ravel(), y.ravel(), c=rho.ravel(), s=18, cmap="viridis")
        ax_map.set_xlabel("x (C-C distances)")
        ax_map.set_ylabel("y (C-C distances)")
    else:
        im = ax_map.imshow(rho.T, origin="lower", cmap="viridis", interpolation="nearest")
        ax_map.set_xlabel("x (lattice constants)")
        ax_map.set_ylabel("y (lattice constants)")
    ax_map.set_aspect("equal")
    ax_map.set_title(f"layer z = {attrs['layer']}, E = {energy:g} t")
    fig.colorbar(im, ax=ax_map, label=f"LDOS summed over {attrs['orbitals_summed']} orbitals (1/t)")
    e, rows_rho = f["/ldos/energy"][:], f["/ldos/rho"][:]
    per_site = rows_rho.reshape(-1, int(attrs["orbitals_summed"]), len(e)).sum(axis=1)
    ax_curve.plot(e, per_site.mean(axis=0), color="k", lw=1.4, label="layer mean")
    hi = np.unravel_index(np.argmax(rho), rho.shape)
    lo = np.unravel_index(np.argmin(rho), rho.shape)
    ax_curve.plot(e, per_site[hi[0] * rho.shape[1] + hi[1]], lw=1.0, label=f"site {tuple(int(v) for v in hi)} (max)")
    ax_curve.plot(e, per_site[lo[0] * rho.shape[1] + lo[1]], lw=1.0, label=f"site {tuple(int(v) for v in lo)} (min)")
    ax_curve.axvline(energy, color="C3", ls="--", lw=1.0, label="map energy")
    ax_curve.set_xlabel("energy E (units of t)")
    ax_curve.set_ylabel("site LDOS (1/t)")
    ax_curve.set_xlim(e[0], e[-1])
    ax_curve.set_ylim(bottom=0)
    ax_curve.legend(loc="upper right", fontsize=8)


def plot_spectral(f, ax, fig):
    e, a = f["/spectral/energy"][:], f["/spectral/A"][:]
    dist = f["/spectral/path_distance"][:] if "/spectral/path_distance" in f else np.arange(a.shape[0])
    if len(dist) > 1:
        mids = (dist[1:] + dist[:-1]) / 2
        xedges = np.concatenate([[dist[0] - (mids[0] - dist[0])], mids, [dist[-1] + (dist[-1] - mids[-1])]])
    else:
        xedges = np.array([dist[0] - 0.5, dist[0] + 0.5])
    emids = (e[1:] + e[:-1]) / 2
    eedges = np.concatenate([[e[0] - (emids[0] - e[0])], emids, [e[-1] + (e[-1] - emids[-1])]])
    vmax = np.percentile(a, 99.5)
    mesh = ax.pcolormesh(xedges, eedges, np.clip(a, 0, None).T, cmap="magma", vmin=0, vmax=vmax, shading="flat")
    fig.colorbar(mesh, ax=ax, label="A(k, E) (1/t per state)")
    if "/spectral/bands" in f:
        bands = f["/spectral/bands"][:]
        for b in range(bands.shape[1]):
            ax.plot(dist, bands[:, b], color="c", lw=0.6, alpha=0.8, ls="--",
                    label="bands of the Bloch Hamiltonian" if b == 0 else None)
        ax.legend(loc="upper right", fontsize=8)
    attrs = f["/spectral"].attrs
    if "/spectral/ticks" in f and attrs.get("tick_labels", ""):
        ticks = f["/spectral/ticks"][:]
        labels = [GREEK.get(s, s) for s in attrs["tick_labels"].split(",")]
        ax.set_xticks(dist[ticks])
        ax.set_xticklabels(labels)
        for t in dist[ticks]:
            ax.axvline(t, color="w", lw=0.5, alpha=0.5)
        ax.set_xlabel("momentum along the path")
    else:
        ax.set_xlabel("momentum index / path length (1 / lattice constant)")
    ax.set_ylabel("energy E (units of t)")
    ax.set_ylim(e[0], e[-1])


def main(argv=None):
    p = argparse.ArgumentParser(prog="kpm-plot", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("result", help="HDF5 result file of kpm-dos")
    p.add_argument("-o", "--output", help="image file (.png, .svg, .pdf); default RESULT.png")
    p.add_argument("--kind", choices=["dos", "ldos", "map", "spectral"], help="what to draw (default: the richest content)")
    p.add_argument("--dpi", type=int, default=100, help="dots per inch of raster output (default 100)")
    args = p.parse_args(argv)
    try:
        f = h5py.File(args.result, "r")
    except OSError as exc:
        sys.exit(f"kpm-plot: cannot read '{args.result}': {exc}")
    have = {"spectral": "/spectral/A" in f, "map": "/ldos_map/rho" in f, "ldos": "/ldos/rho" in f, "dos": "/dos/rho" in f}
    kind = args.kind or next((k for k in ["spectral", "map", "ldos", "dos"] if have[k]), None)
    if kind is None or not have[kind]:
        sys.exit(f"kpm-plot: '{args.result}' has no {kind or 'plottable'} data "
                 f"(has: {', '.join(k for k, v in have.items() if v) or 'nothing'})")
    output = args.output or os.path.splitext(args.result)[0] + ".png"
    fig = plt.figure(figsize=SIZES[kind])
    if kind == "map":
        plot_map(f, fig)
    else:
        ax = fig.add_subplot(1, 1, 1)
        {"dos": lambda: plot_dos(f, ax), "ldos": lambda: plot_ldos(f, ax),
         "spectral": lambda: plot_spectral(f, ax, fig)}[kind]()
    fig.suptitle(title_of(f), fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.96))  # room for the suptitle
    try:
        fig.savefig(output, dpi=args.dpi)
    except (OSError, ValueError) as exc:
        sys.exit(f"kpm-plot: cannot write '{output}': {exc}")
    print(f"plot written to {output}")


if __name__ == "__main__":
    main()
