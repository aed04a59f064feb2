#!/usr/bin/python3
"""kpm-plot: draw whatever a kpm-dos or kpm-eigs result file holds (docs/physics.md).

    kpm-plot RESULT.h5 [-o FILE.png|.svg|.pdf] [--kind dos|ldos|map|spectral|eigs] [--dos DOS.h5] [--dpi N]

  dos       the DOS rho(E) with its error band (+-1 standard error) when the file has one
  ldos      local DOS curves of the selected rows (up to 8, with the mean of all rows); with
            /green (kpm-dos --green ETA) the exact -Im G_jj/pi dashed over the KPM LDOS
            recomputed from /ldos/moments with the Lorentz kernel of the same broadening,
            lambda = ETA M / a (models.md §7)
  map       the real-space LDOS map of a surface layer at one energy (/ldos_map)
  spectral  A(k, E) as a heat map along the momentum path, with the bands when known
  eigs      eigenvalues (kpm-eigs) against their surface weight (ti: on the top and bottom
            layers; graphene: on sublattice A), over the KPM DOS of a kpm-dos file (--dos)

Without --kind the richest content is drawn (eigs > spectral > map > ldos > dos). Energies are
in units of the hopping t. Uses Debian's /usr/bin/python3 (h5py, numpy, matplotlib):
the `python3` first on PATH may be an interpreter without them.
"""
import argparse
import math
import os
import stat
import sys

try:
    import h5py
    import numpy as np
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as exc:  # pragma: no cover - depends on the machine
    sys.exit(f"kpm-plot: error: needs h5py, numpy and matplotlib ({exc.name}); on Debian: "
             "apt-get install python3-h5py python3-matplotlib")
except KeyboardInterrupt:  # the imports take a moment
    sys.exit("kpm-plot: interrupted")

# Figure sizes in inches; with the default dpi 100 the PNG is exactly 100x these in pixels.
SIZES = {"dos": (8.0, 5.0), "ldos": (8.0, 5.0), "map": (10.0, 4.5), "spectral": (8.0, 6.0), "eigs": (8.0, 5.0)}
GREEK = {"G": "Γ"}

# A result file may come from anywhere: every dataset is checked (a plain dataset, type,
# shape, a size that the file really stores, finite values) before it is read. Messages
# quote the path and the dataset's name, never the file's contents.
MAX_VALUES = 1 << 26  # values per dataset (512 MiB of float64): far beyond any plot
MAX_FILTERED_VALUES = 1 << 24  # of a compressed dataset (128 MiB of float64)
MAX_TEXT = 256  # characters of a text attribute that ends up in the figure


class BadInput(Exception):
    """The result file is not usable: reported as one line, exit code 2."""


class CannotWrite(Exception):
    """The image cannot be written: one line, exit code 1."""


class Result:
    """Checked access to an open result file."""

    def __init__(self, path, f):
        self.path, self.f = path, f

    def bad(self, what):
        return BadInput(f"'{self.path}': {what}")

    def has(self, name):
        """Whether `name` exists, reached through plain (hard) links only."""
        node = self.f
        for part in [p for p in name.split("/") if p]:
            if not isinstance(node, h5py.Group) or part not in node:
                return False
            link = node.get(part, getlink=True)
            if not isinstance(link, h5py.HardLink):
                raise self.bad(f"'{name}' is a soft or external link (only plain objects are read)")
            node = node[part]
        return True

    def group(self, name):
        if not self.has(name) or not isinstance(self.f[name], h5py.Group):
            raise self.bad(f"no group '{name}' (not a kpm-dos result file?)")
        return self.f[name]

    def array(self, name, ndim, kind="f", shape=None):
        """Dataset `name` as a numpy array of `ndim` dimensions and dtype kind(s) `kind`
        ("f" float, "iu" integer), of `shape` where given (None entries are free)."""
        if not self.has(name) or not isinstance(self.f[name], h5py.Dataset):
            raise self.bad(f"no dataset '{name}'")
        d = self.f[name]
        if d.dtype.kind not in kind or (kind == "f" and d.dtype.itemsize > 16):
            raise self.bad(f"dataset '{name}' is not {'floating point' if kind == 'f' else 'integer'}")
        if d.shape is None or len(d.shape) != ndim:
            raise self.bad(f"dataset '{name}' has {len(d.shape or ())} dimensions, expected {ndim}")
        if shape is not None and any(w is not None and h != w for h, w in zip(d.shape, shape)):
            want = ", ".join("*" if w is None else str(w) for w in shape)
            raise self.bad(f"dataset '{name}' has shape {list(d.shape)}, expected [{want}]")
        count = math.prod(d.shape)
        if count > MAX_VALUES:
            raise self.bad(f"dataset '{name}' claims {count} values, more than {MAX_VALUES}")
        if count == 0:
            raise self.bad(f"dataset '{name}' is empty")
        # Unwritten chunks are not read: what the shape claims must be stored (compressed
        # data, which can expand a thousandfold, only up to MAX_FILTERED_VALUES).
        if d.id.get_create_plist().get_nfilters() > 0:
            if count > MAX_FILTERED_VALUES:
                raise self.bad(f"compressed dataset '{name}' claims {count} values, more than {MAX_FILTERED_VALUES}")
        elif d.id.get_storage_size() < count * d.dtype.itemsize:
            raise self.bad(f"dataset '{name}' of shape {list(d.shape)} does not store its values")
        a = d[...]
        if kind == "f" and not np.all(np.isfinite(a)):
            raise self.bad(f"dataset '{name}' holds non-finite values")
        return a

    def attribute(self, obj, key, default=None):
        """The raw attribute `key` of `obj`; `default` when absent and a default is given."""
        attrs = self.f[obj].attrs
        if key in attrs:
            return attrs[key]
        if default is not None:
            return default
        raise self.bad(f"no attribute '{key}' of '{obj}'")

    def number(self, obj, key, default=None, integer=False):
        """A finite numeric scalar attribute (or `default` when absent and a default is given)."""
        v = self.attribute(obj, key, default)
        if v is default and default is not None:
            return default
        v = v.item() if isinstance(v, np.ndarray) and v.shape == () else v
        ok = isinstance(v, (int, np.integer)) if integer else isinstance(v, (int, float, np.integer, np.floating))
        if isinstance(v, (bool, np.bool_)) or not ok or not math.isfinite(v):
            raise self.bad(f"attribute '{key}' of '{obj}' is not a finite {'integer' if integer else 'number'}")
        return int(v) if integer else float(v)

    def text(self, obj, key, default=None):
        """A short printable text attribute (it is drawn into the figure)."""
        v = self.attribute(obj, key, default)
        if v is default and default is not None:
            return default
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        if not isinstance(v, str) or len(v) > MAX_TEXT or not v.isprintable():
            raise self.bad(f"attribute '{key}' of '{obj}' is not printable text of at most {MAX_TEXT} characters")
        return v


def check_input_path(path):
    """The result file must be an existing, readable regular file (not a FIFO: h5py would block)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise BadInput(f"cannot read '{path}': {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"cannot read '{path}': it is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"cannot read '{path}': not a regular file (a FIFO, socket or device)")
    if not os.access(path, os.R_OK):
        raise BadInput(f"cannot read '{path}': permission denied")


def title_of(r):
    r.group("/model")
    kpm = not r.has("/eigs")  # a kpm-eigs file has /eigs instead of /kpm
    if kpm:
        r.group("/kpm")
    name = r.text("/model", "name")
    if name == "matrix-market":  # a matrix from a file has no lattice (models.md §8)
        lattice = f"{r.number('/model', 'num_orbitals', integer=True)} rows"
    else:
        lattice = f"{r.number('/model', 'Nx', integer=True)}x{r.number('/model', 'Ny', integer=True)}"
    if name in ("ti", "hr"):
        lattice += f"x{r.number('/model', 'Nz', integer=True)}"
    extra = []
    if name == "ti":
        extra.append(f"m = {r.number('/model', 'm'):g}")
    if r.number("/model", "dot_period", 0) and r.number("/model", "dot_potential", 0):
        extra.append(f"dots V = {r.number('/model', 'dot_potential'):g}, P = {r.number('/model', 'dot_period'):g}, "
                     f"r = {r.number('/model', 'dot_radius', 0):g}")
    if r.number("/model", "disorder", 0):
        extra.append(f"W = {r.number('/model', 'disorder'):g}")
    if kpm:
        extra.append(f"M = {r.number('/kpm', 'num_moments', integer=True)}")
        realizations = r.number("/kpm", "num_realizations", 1, integer=True)
        if realizations > 1:
            extra.append(f"{realizations} realizations")
    else:
        extra.append(f"{r.number('/eigs', 'num_found', integer=True)} eigenpairs by {r.text('/eigs', 'method')}")
    return f"{name} {lattice}, " + ", ".join(extra)


def energies(r, name):
    e = r.array(name, 1)
    if len(e) < 2 or not np.all(np.diff(e) > 0):
        raise r.bad(f"dataset '{name}' is not an increasing energy grid of at least 2 points")
    return e


def plot_dos(r, ax):
    e = energies(r, "/dos/energy")
    rho = r.array("/dos/rho", 1, shape=(len(e),))
    ax.plot(e, rho, color="C0", lw=1.2, label="ρ(E)")
    if r.has("/dos/rho_stderr"):
        se = r.array("/dos/rho_stderr", 1, shape=(len(e),))
        what = r.text("/dos", "stderr_samples", "samples")
        ax.fill_between(e, rho - se, rho + se, color="C0", alpha=0.35, lw=0,
                        label=f"± 1 standard error ({what})")
    ax.set_xlabel("energy E (units of t)")
    ax.set_ylabel("DOS ρ(E) (states per state per t)")
    ax.set_xlim(e[0], e[-1])
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right")


def lorentz_ldos(r, moments, e, eta):
    """The Lorentz-kernel KPM LDOS of the moments [nr, M] on the energies e with the broadening
    eta of the Green's function: lambda = eta M / a (models.md §7)."""
    a = r.number("/kpm", "scale_a")
    b = r.number("/kpm", "scale_b")
    m = moments.shape[1]
    lam = eta * m / a
    x = np.clip((e - b) / a, -1 + 1e-12, 1 - 1e-12)
    n = np.arange(m)
    g = np.sinh(lam * (1.0 - n / m)) / np.sinh(lam)
    c = moments * g[None, :]
    c[:, 1:] *= 2.0
    return c @ np.cos(np.outer(n, np.arccos(x))) / (a * np.pi * np.sqrt(1.0 - x * x))[None, :], lam


def plot_ldos(r, ax):
    e = energies(r, "/ldos/energy")
    rows = r.array("/ldos/rows", 1, kind="iu")
    rho = r.array("/ldos/rho", 2, shape=(len(rows), len(e)))
    shown = np.unique(np.linspace(0, len(rows) - 1, min(8, len(rows))).astype(int))
    if r.has("/green/rho"):
        # Exact -Im G_jj(E + i eta)/pi (dashed) over the KPM LDOS of the same moments with
        # the Lorentz kernel of the same broadening (solid): they differ by the kernel's shape.
        ge = energies(r, "/green/energy")
        grows = r.array("/green/rows", 1, kind="iu")
        if len(grows) != len(rows) or not np.array_equal(grows, rows):
            raise r.bad("'/green/rows' differs from '/ldos/rows'")
        grho = r.array("/green/rho", 2, shape=(len(rows), len(ge)))
        eta = r.number("/green", "eta")
        if not eta > 0:
            raise r.bad("attribute 'eta' of '/green' is not positive")
        mom = r.array("/ldos/moments", 2)
        if mom.shape[0] != len(rows) or mom.shape[1] < 2:
            raise r.bad("'/ldos/moments' does not have one row of moments per LDOS row")
        kpm, lam = lorentz_ldos(r, mom, ge, eta)
        for j, i in enumerate(shown):
            ax.plot(ge, kpm[i], lw=1.0, color=f"C{j}", label=f"row {rows[i]}")
            ax.plot(ge, grho[i], lw=1.0, ls="--", color=f"C{j}")
        if len(rows) > 1:
            ax.plot(ge, kpm.mean(axis=0), color="k", lw=1.8, label=f"mean of {len(rows)} rows")
            ax.plot(ge, grho.mean(axis=0), color="k", lw=1.8, ls="--")
        ax.plot([], [], color="gray", lw=1.0, label=f"KPM, Lorentz λ = {lam:.3g} (η = λa/M)")
        ax.plot([], [], color="gray", lw=1.0, ls="--", label=f"exact −Im G/π, η = {eta:.3g} t")
        e = ge
    else:
        for i in shown:
            ax.plot(e, rho[i], lw=1.0, label=f"row {rows[i]}")
        if len(rows) > 1:
            ax.plot(e, rho.mean(axis=0), color="k", lw=1.8, label=f"mean of {len(rows)} rows")
    ax.set_xlabel("energy E (units of t)")
    ax.set_ylabel("local DOS ρ_j(E) (1/t)")
    ax.set_xlim(e[0], e[-1])
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize=8)


def plot_map(r, fig):
    r.group("/ldos_map")
    rho = r.array("/ldos_map/rho", 2)
    energy = r.number("/ldos_map", "energy")
    layer = r.number("/ldos_map", "layer", integer=True)
    orbitals = r.number("/ldos_map", "orbitals_summed", integer=True)
    if orbitals < 1:
        raise r.bad("attribute 'orbitals_summed' of '/ldos_map' is not a positive integer")
    e = energies(r, "/ldos/energy")
    rows_rho = r.array("/ldos/rho", 2, shape=(rho.size * orbitals, len(e)))
    ax_map, ax_curve = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1.0]})
    if r.text("/ldos_map", "model", "ti") == "graphene":
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
    ax_map.set_title(f"layer z = {layer}, E = {energy:g} t")
    fig.colorbar(im, ax=ax_map, label=f"LDOS summed over {orbitals} orbitals (1/t)")
    per_site = rows_rho.reshape(-1, orbitals, len(e)).sum(axis=1)
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


def plot_spectral(r, ax, fig):
    e = energies(r, "/spectral/energy")
    a = r.array("/spectral/A", 2, shape=(None, len(e)))
    nk = a.shape[0]
    dist = r.array("/spectral/path_distance", 1, shape=(nk,)) if r.has("/spectral/path_distance") else np.arange(nk)
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
    if r.has("/spectral/bands"):
        bands = r.array("/spectral/bands", 2, shape=(nk, None))
        for b in range(bands.shape[1]):
            ax.plot(dist, bands[:, b], color="c", lw=0.6, alpha=0.8, ls="--",
                    label="bands of the Bloch Hamiltonian" if b == 0 else None)
        ax.legend(loc="upper right", fontsize=8)
    r.group("/spectral")
    tick_labels = r.text("/spectral", "tick_labels", "")
    if r.has("/spectral/ticks") and tick_labels:
        ticks = r.array("/spectral/ticks", 1, kind="iu")
        labels = [GREEK.get(s, s) for s in tick_labels.split(",")]
        if len(labels) != len(ticks) or np.any(ticks < 0) or np.any(ticks >= nk):
            raise r.bad(f"dataset '/spectral/ticks' does not match its {len(labels)} tick labels and {nk} momenta")
        ax.set_xticks(dist[ticks])
        ax.set_xticklabels(labels)
        for t in dist[ticks]:
            ax.axvline(t, color="w", lw=0.5, alpha=0.5)
        ax.set_xlabel("momentum along the path")
    else:
        ax.set_xlabel("momentum index / path length (1 / lattice constant)")
    ax.set_ylabel("energy E (units of t)")
    ax.set_ylim(e[0], e[-1])


def plot_eigs(r, ax, dos_path):
    values = r.array("/eigs/values", 1)
    k = len(values)
    if r.text("/model", "name") == "ti":
        w = r.array("/eigs/layer_weight", 2, shape=(k, None))
        weight, what = w[:, 0] + w[:, -1], "weight on the top and bottom layers"
    else:
        w = r.array("/eigs/sublattice_weight", 2, shape=(k, 2))
        weight, what = w[:, 0], "weight on sublattice A"
    if dos_path:
        check_input_path(dos_path)
        try:
            g = h5py.File(dos_path, "r")
        except Exception:
            raise BadInput(f"cannot read '{dos_path}': not an HDF5 file, or a damaged one") from None
        with g:
            d = Result(dos_path, g)
            e = energies(d, "/dos/energy")
            rho = d.array("/dos/rho", 1, shape=(len(e),))
        behind = ax.twinx()
        behind.fill_between(e, 0, rho, color="0.85", lw=0, label="KPM DOS (--dos)")
        behind.set_ylabel("DOS ρ(E) (states per state per t)", color="0.45")
        behind.set_ylim(bottom=0)
        ax.set_zorder(behind.get_zorder() + 1)
        ax.patch.set_visible(False)
    ax.scatter(values, weight, s=22, c=weight, cmap="viridis", vmin=0, vmax=1, edgecolors="k", linewidths=0.3,
               label=f"{k} eigenpairs")
    ax.set_xlabel("energy E (units of t)")
    ax.set_ylabel(what)
    ax.set_ylim(-0.02, 1.02)
    pad = 0.05 * max(values[-1] - values[0], 1e-3)
    ax.set_xlim(values[0] - pad, values[-1] + pad)
    ax.legend(loc="upper right", fontsize=8)


def plot(args):
    """Draws args.result into the output image; raises BadInput for an unusable file."""
    check_input_path(args.result)
    try:
        f = h5py.File(args.result, "r")
    except Exception:  # h5py raises OSError, but a damaged file can raise others
        raise BadInput(f"cannot read '{args.result}': not an HDF5 file, or a damaged one") from None
    try:
        with f:
            output = draw(args, Result(args.result, f))
    except OSError:  # HDF5 failed to read a damaged object; its text may quote the file
        raise BadInput(f"cannot read '{args.result}': damaged HDF5 data") from None
    print(f"plot written to {output}")


def draw(args, r):
    have = {"eigs": r.has("/eigs/values"), "spectral": r.has("/spectral/A"), "map": r.has("/ldos_map/rho"), "ldos": r.has("/ldos/rho"),
            "dos": r.has("/dos/rho")}
    kind = args.kind or next((k for k in ["eigs", "spectral", "map", "ldos", "dos"] if have[k]), None)
    if kind is None or not have[kind]:
        raise BadInput(f"'{args.result}' has no {kind or 'plottable'} data "
                       f"(has: {', '.join(k for k, v in have.items() if v) or 'nothing'})")
    title = title_of(r)
    output = args.output or os.path.splitext(args.result)[0] + ".png"
    fig = plt.figure(figsize=SIZES[kind])
    if kind == "map":
        plot_map(r, fig)
    else:
        ax = fig.add_subplot(1, 1, 1)
        {"dos": lambda: plot_dos(r, ax), "ldos": lambda: plot_ldos(r, ax),
         "eigs": lambda: plot_eigs(r, ax, args.dos),
         "spectral": lambda: plot_spectral(r, ax, fig)}[kind]()
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.96))  # room for the suptitle
    try:
        fig.savefig(output, dpi=args.dpi)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0][:200]
        raise CannotWrite(f"cannot write '{output}': {reason}") from None
    return output


def main(argv=None):
    p = argparse.ArgumentParser(prog="kpm-plot", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("result", help="HDF5 result file of kpm-dos or kpm-eigs")
    p.add_argument("-o", "--output", help="image file (.png, .svg, .pdf); default RESULT.png")
    p.add_argument("--kind", choices=["dos", "ldos", "map", "spectral", "eigs"], help="what to draw (default: the richest content)")
    p.add_argument("--dos", help="with eigs: a kpm-dos result of the same system whose DOS is drawn behind the eigenvalues")
    p.add_argument("--dpi", type=int, default=100, help="dots per inch of raster output, 10 .. 1000 (default 100)")
    args = p.parse_args(argv)
    if not 10 <= args.dpi <= 1000:
        p.error(f"--dpi {args.dpi}: allowed range 10 .. 1000")
    # One line on stderr for every failure, never a traceback: 2 bad input, 1 cannot write,
    # 3 an internal error, 130 interrupted.
    try:
        plot(args)
        sys.stdout.flush()
    except BadInput as exc:
        print(f"kpm-plot: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kpm-plot: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed early (kpm-plot ... | head): nothing more to say; keep Python quiet at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except CannotWrite as exc:
        print(f"kpm-plot: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug or an unforeseen file: one line, not a traceback
        print(f"kpm-plot: error: internal error ({type(exc).__name__}) while plotting '{args.result}'; "
              "please report it", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("kpm-plot: interrupted", file=sys.stderr)
        sys.exit(130)
