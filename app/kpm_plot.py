#!/usr/bin/python3
"""kpm-plot: draw whatever a kpm-dos or kpm-eigs result file holds (docs/physics.md).

    kpm-plot RESULT.h5 [-o FILE] [--kind dos|ldos|map|spectral|eigs] [--dos DOS.h5]
                       [--xlim LO:HI] [--ylim LO:HI] [--log] [--format png|pdf|svg] [--dpi N]
                       [--title TEXT] [--describe]

  dos       the DOS rho(E) with its error band (+-1 standard error) when the file has one
  ldos      local DOS curves of the selected rows (up to 8, with the mean of all rows), each
            labelled by its site, orbital and position (models.md row order); with /green
            (kpm-dos --green ETA) the exact -Im G_jj/pi dashed over the KPM LDOS recomputed
            from /ldos/moments with the Lorentz kernel of the same broadening,
            lambda = ETA M / a (models.md §7), and below them their absolute difference
  map       the real-space LDOS map of a surface layer at one energy (/ldos_map), the quantum
            dots of /model outlined
  spectral  A(k, E) as a heat map along the momentum path (k in 1/a, the path's
            high-symmetry points named), with the bands when known
  eigs      every eigenvalue (kpm-eigs) against its weight on the top (z = 0) and the bottom
            (z = Nz-1) layer (graphene: sublattices A and B; a model read from a file: the
            levels alone), one marker each; degenerate levels are drawn once, at the level's
            mean weights, and marked "xg"; over the KPM DOS of a kpm-dos file (--dos)

Axes: --xlim/--ylim zoom the main panel: energy and DOS (dos, ldos), energy and weight
(eigs), k and energy (spectral), the map's x and y (map). --log draws the DOS/LDOS on a log
y axis (down to 1e-6 of its largest value unless --ylim says otherwise), and the map and
A(k, E) with a log colour scale (down to 1e-4 of the largest value).

The image goes to -o FILE, in the format of its suffix (.png, .pdf, .svg) or of --format
(which is added to a name without a suffix); by default to RESULT with the format's suffix
(png unless --format says otherwise) for its extension (RESULT.png when that would be
RESULT itself). A path naming an input file is refused, and the line "plot written to
FILE" names the file written. --describe prints, instead of that line, one JSON object
describing the figure (output, format, size, title; per axes its labels, limits, scales,
lines, legend and colour scales; per kind the facts drawn), for scripts and tests.

Without --kind the richest content is drawn (eigs > spectral > map > ldos > dos). Energies are
in units of the hopping t. Uses Debian's /usr/bin/python3 (h5py, numpy, matplotlib):
the `python3` first on PATH may be an interpreter without them.
"""
import argparse
import json
import math
import os
import stat
import sys

try:
    import h5py
    import numpy as np
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches
    import matplotlib.patheffects
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FixedLocator
except ImportError as exc:  # pragma: no cover - depends on the machine
    sys.exit(f"kpm-plot: error: needs h5py, numpy and matplotlib ({exc.name}); on Debian: "
             "apt-get install python3-h5py python3-matplotlib")
except KeyboardInterrupt:  # the imports take a moment
    sys.exit("kpm-plot: interrupted")

# Figure sizes in inches; with the default dpi 100 the PNG is exactly 100x these in pixels.
# "green" is the ldos figure with the difference panel below the curves.
SIZES = {"dos": (8.0, 5.0), "conductivity": (8.0, 5.0), "ldos": (8.0, 5.0), "green": (8.0, 6.5), "map": (10.0, 4.5), "spectral": (8.0, 6.0),
         "eigs": (8.0, 5.0)}
GREEK = {"G": "Γ"}
OUTLINED = [matplotlib.patheffects.withStroke(linewidth=2.2, foreground="k")]  # white lines seen on any colour
FORMATS = ("png", "pdf", "svg")
DPI_RANGE = (10, 1000)
LOG_DEPTH_CURVES = 1e-6  # --log: a curve's axis reaches down to this fraction of its largest value
LOG_DEPTH_COLOURS = 1e-4  # --log: a colour scale spans this fraction of its largest value
# Text embedded as text in vector output (journals ask for editable TrueType, not Type 3).
matplotlib.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none"})

# A result file may come from anywhere: every dataset is checked (a plain dataset, type,
# shape, a size that the file really stores, finite values) before it is read. Messages
# quote the path and the dataset's name, never the file's contents.
MAX_VALUES = 1 << 26  # values per dataset (512 MiB of float64): far beyond any plot
MAX_FILTERED_VALUES = 1 << 24  # of a compressed dataset (128 MiB of float64)
MAX_TEXT = 256  # characters of a text attribute (or --title) that ends up in the figure


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


def same_file(a, b):
    """Whether the paths name one file: the same inode when both exist, else the same resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def image_path(args):
    """The file the image is written to, with its suffix, and its format (png, pdf, svg).
    The format is the suffix of -o, or --format (added to an -o without a suffix; they must
    agree when both are given), else png. Default file: RESULT with its extension replaced
    by the format's, or RESULT.png (.pdf, .svg) when that would be RESULT itself. An image
    path naming an input file is refused: the plot would destroy its own data."""
    if args.output is None:
        fmt = args.format or "png"
        output = os.path.splitext(args.result)[0] + "." + fmt
        if same_file(output, args.result):
            output = args.result + "." + fmt
    else:
        ext = os.path.splitext(args.output)[1]
        fmt = ext[1:].lower() if ext else (args.format or "png")
        output = args.output if ext else args.output + "." + fmt
    for option, given in (("the result", args.result), ("--dos", args.dos)):
        if given and same_file(output, given):
            raise BadInput(f"-o '{output}' is the input file '{given}' ({option}): writing the image there would "
                           "destroy it; give another -o")
    if fmt not in FORMATS:
        raise BadInput(f"-o '{args.output}': '{ext}' is not an image format this tool writes "
                       f"(allowed: {', '.join('.' + f for f in FORMATS)})")
    if args.format and args.format != fmt:
        raise BadInput(f"--format {args.format} disagrees with the suffix of -o '{args.output}': "
                       "give one of them, or make them agree")
    return output, fmt


def check_eigs_found(r):
    """A kpm-eigs result with no eigenvalue in its window is valid but has nothing to draw."""
    r.group("/eigs")
    if r.has("/eigs/values") and r.f["/eigs/values"].shape == (0,) and r.number("/eigs", "num_found", integer=True) == 0:
        lo, hi = r.number("/eigs", "window_min", 0.0), r.number("/eigs", "window_max", 0.0)
        where = f"in the window [{lo:g}, {hi:g}] t" if r.text("/eigs", "request", "") == "window" else "found"
        raise BadInput(f"'{r.path}' is a valid kpm-eigs result with no eigenvalue {where}: nothing to plot")


class Geometry:
    """What the pictures need to know of a model (models.md §2 ti, §3 graphene, §8 hr and
    matrix-market), in one place: the plots ask these properties, never the model's name.
    lattice: rows sit on a lattice (matrix-market: rows only); extents: the lattice extents in
    the title (Nx, Ny[, Nz]); per_cell: orbitals per cell (None: /model num_orbitals);
    honeycomb: graphene's cells at m a1 + n a2, a1 = (sqrt3, 0), a2 = (sqrt3/2, 3/2), sites A
    and B 1 apart, one layer; slab: ti's sites at integer positions with surfaces at z = 0
    and Nz-1 and the mass m in the title (other lattices: cells whose orbitals count from 1, as
    in an _hr.dat file)."""

    def __init__(self, lattice=True, extents=2, per_cell=None, honeycomb=False, slab=False):
        self.lattice, self.extents, self.per_cell = lattice, extents, per_cell
        self.honeycomb, self.slab = honeycomb, slab


GEOMETRY = {
    "ti": Geometry(extents=3, per_cell=4, slab=True),
    "graphene": Geometry(per_cell=2, honeycomb=True),
    "hr": Geometry(extents=3),
    "matrix-market": Geometry(lattice=False),
}


def geometry(name):
    """The Geometry of the model `name`; a name of no model reads as a 2-extent lattice."""
    return GEOMETRY.get(name, Geometry())


def title_of(r):
    r.group("/model")
    kpm = not r.has("/eigs")  # a kpm-eigs file has /eigs instead of /kpm
    if kpm:
        r.group("/kpm")
    name = r.text("/model", "name")
    g = geometry(name)
    if not g.lattice:  # a matrix from a file has no lattice (models.md §8)
        lattice = f"{r.number('/model', 'num_orbitals', integer=True)} rows"
    else:
        lattice = f"{r.number('/model', 'Nx', integer=True)}x{r.number('/model', 'Ny', integer=True)}"
    if g.extents == 3:
        lattice += f"x{r.number('/model', 'Nz', integer=True)}"
    extra = []
    if g.slab:
        extra.append(f"m = {r.number('/model', 'm'):g}")
    if r.number("/model", "dot_period", 0) and r.number("/model", "dot_potential", 0):
        extra.append(f"dots V = {r.number('/model', 'dot_potential'):g}, P = {r.number('/model', 'dot_period'):g}, "
                     f"r = {r.number('/model', 'dot_radius', 0):g}")
    if r.number("/model", "disorder", 0):
        extra.append(f"W = {r.number('/model', 'disorder'):g}")
    if r.number("/model", "exchange_mass", 0):
        extra.append(f"exchange mass {r.number('/model', 'exchange_mass'):g} t on the z faces")
    if r.number("/model", "magnetic_flux", 0):
        extra.append(f"flux Φ = {r.text('/model', 'magnetic_flux_fraction', '') or format(r.number('/model', 'magnetic_flux'), 'g')}"
                     " h/e per cell")
    if kpm:
        extra.append(f"M = {r.number('/kpm', 'num_moments', integer=True)}")
        realizations = r.number("/kpm", "num_realizations", 1, integer=True)
        if realizations > 1:
            extra.append(f"{realizations} realizations")
    else:
        extra.append(f"{r.number('/eigs', 'num_found', integer=True)} eigenpairs by {r.text('/eigs', 'method')}")
    return f"{name} {lattice}, " + ", ".join(extra)


def row_places(r, rows, dataset):
    """Where each row of `dataset` sits, from /model and the spec's canonical row order
    (models.md §2 ti, §3 graphene, §8 hr; a matrix-market row is only a row): per row a dict
    with its row, site, orbital, position (where the model has one), surface (ti: "top" at
    z = 0, "bottom" at z = Nz-1) and a legend label."""
    n = r.number("/kpm", "num_rows", integer=True)
    if np.any(rows < 0) or np.any(rows >= n):
        raise r.bad(f"dataset '{dataset}' holds a row outside 0 .. {n - 1} ('/kpm' num_rows)")
    g = geometry(r.text("/model", "name"))
    if not g.lattice:
        return [{"row": int(j), "label": f"row {j}"} for j in rows]
    dims = [r.number("/model", k, integer=True) for k in ("Nx", "Ny", "Nz")]
    per_cell = g.per_cell or r.number("/model", "num_orbitals", integer=True)
    if g.honeycomb:
        dims[2] = 1
    if min(dims) < 1 or per_cell < 1 or math.prod(dims) * per_cell != n:
        raise r.bad(f"the lattice of '/model' ({dims[0]}x{dims[1]}x{dims[2]} cells of {per_cell} orbitals) "
                    f"does not have the {n} rows of '/kpm' num_rows")
    nx, ny, nz = dims
    places = []
    for j in (int(v) for v in rows):
        o, cell = j % per_cell, j // per_cell
        if g.honeycomb:  # row = s + 2 (n + Ny m); A at m a1 + n a2, B 1 above it
            m, k = divmod(cell, ny)
            x, y = math.sqrt(3) * m + math.sqrt(3) / 2 * k, 1.5 * k + o
            sub = "AB"[o]
            places.append({"row": j, "site": [m, k], "orbital": sub, "position": [round(x, 6), round(y, 6)],
                           "label": f"cell ({m}, {k}) {sub}, r = ({x:.2f}, {y:.2f})"})
            continue
        # ti: site = z + Nz (y + Ny x), row = o + 4 site; hr: the same with num_wann orbitals
        x, rest = divmod(cell, ny * nz)
        y, z = divmod(rest, nz)
        place = {"row": j, "site": [x, y, z], "orbital": o}
        if g.slab:
            place["position"] = [x, y, z]
            place["surface"] = "top" if z == 0 else "bottom" if z == nz - 1 else None
            where = f" ({place['surface']})" if place["surface"] else ""
            place["label"] = f"site ({x}, {y}, {z}) orbital {o}{where}"
        else:  # Wannier orbitals count from 1 in the _hr.dat file
            place["label"] = f"cell ({x}, {y}, {z}) orbital {o + 1}"
        places.append(place)
    return places


def energies(r, name):
    e = r.array(name, 1)
    if len(e) < 2 or not np.all(np.diff(e) > 0):
        raise r.bad(f"dataset '{name}' is not an increasing energy grid of at least 2 points")
    return e


def log_floor(values, what, depth, top=None):
    """--log: the lowest value drawn, the smallest positive value but at least `depth` times
    `top` (default the largest value); refused when `what` has no positive value."""
    positive = values[values > 0]
    if positive.size == 0:
        raise BadInput(f"--log: {what} has no positive value to draw on a log scale")
    return max(float(positive.min()), (float(positive.max()) if top is None else top) * depth)


def curve_scale(ax, args, values, what):
    """The y axis of DOS-like curves: from 0 (linear) or a log axis from log_floor."""
    if args.log:
        floor = log_floor(values, what, LOG_DEPTH_CURVES)
        ax.set_yscale("log")
        ax.set_ylim(bottom=floor)
    else:
        ax.set_ylim(bottom=0)


def colour_norm(args, values, what, vmax, linear):
    """The colour scale of a map: `linear` (keyword arguments of the plotting call), or with
    --log a log scale over LOG_DEPTH_COLOURS of vmax."""
    if not args.log:
        return linear
    floor = log_floor(values, what, LOG_DEPTH_COLOURS, vmax)
    return {"norm": LogNorm(vmin=floor, vmax=max(vmax, floor * (1 + 1e-12)))}


def extent(lo, hi, what, unit):
    """The data range of one axis of the main panel, for checking --xlim/--ylim."""
    return (float(lo), float(hi), what, unit)


def plot_dos(r, fig, args):
    ax = fig.add_subplot(1, 1, 1, label="main")
    e = energies(r, "/dos/energy")
    rho = r.array("/dos/rho", 1, shape=(len(e),))
    ax.plot(e, rho, color="C0", lw=1.2, label="ρ(E)")
    top = rho
    if r.has("/dos/rho_stderr"):
        se = r.array("/dos/rho_stderr", 1, shape=(len(e),))
        what = r.text("/dos", "stderr_samples", "samples")
        ax.fill_between(e, rho - se, rho + se, color="C0", alpha=0.35, lw=0,
                        label=f"± 1 standard error ({what})")
        top = rho + se
    ax.set_xlabel("energy E (units of t)")
    ax.set_ylabel("DOS ρ(E) (states per state per t)")
    ax.set_xlim(e[0], e[-1])
    curve_scale(ax, args, rho, "'/dos/rho'")
    ax.legend(loc="upper right")
    return {"ax": ax, "x": extent(e[0], e[-1], "energies", " t"),
            "y": extent(min(rho.min(), 0), top.max(), "DOS values", " 1/t"), "facts": {"points": len(e)}}


def plot_conductivity(r, fig, args):
    if args.log:
        raise BadInput("--log: a conductivity changes sign (σ_xy); --log is for the kinds dos, ldos, map and spectral")
    ax = fig.add_subplot(1, 1, 1, label="main")
    mu = energies(r, "/conductivity/energy")
    sigma = r.array("/conductivity/sigma", 1, shape=(len(mu),))
    ab = r.text("/conductivity", "component", "ab")
    temperature = r.number("/conductivity", "temperature", 0.0)
    label = f"σ_{ab}(μ)" + (f", T = {temperature:g} t" if temperature > 0 else ", T = 0")
    ax.plot(mu, sigma, color="C0", lw=1.2, label=label)
    low, top = sigma, sigma
    if r.has("/conductivity/sigma_stderr"):
        se = r.array("/conductivity/sigma_stderr", 1, shape=(len(mu),))
        ax.fill_between(mu, sigma - se, sigma + se, color="C0", alpha=0.35, lw=0,
                        label="± 1 standard error (random vectors)")
        low, top = sigma - se, sigma + se
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.set_xlabel("chemical potential μ (units of t)")
    ax.set_ylabel(f"σ_{ab} (e²/h)")
    ax.set_xlim(mu[0], mu[-1])
    facts = {"points": len(mu), "component": ab, "temperature": temperature}
    if r.has("/dos/rho"):  # the run's DOS behind sigma (its own axis on the right): where the gaps are
        e = energies(r, "/dos/energy")
        rho = r.array("/dos/rho", 1, shape=(len(e),))
        dos_ax = ax.twinx()
        dos_ax.fill_between(e, 0.0, rho, color="0.85", lw=0, label="DOS ρ(E)")
        dos_ax.set_ylim(0.0, 1.05 * max(rho.max(), 1e-300))
        dos_ax.set_ylabel("DOS ρ(E) (states per state per t)", color="0.45")
        dos_ax.tick_params(axis="y", colors="0.45")
        ax.set_zorder(dos_ax.get_zorder() + 1)  # sigma over the DOS
        ax.patch.set_visible(False)
        handles, labels = ax.get_legend_handles_labels()
        more, more_labels = dos_ax.get_legend_handles_labels()
        ax.legend(handles + more, labels + more_labels, loc="upper right")
        facts["dos"] = "ρ(E) on the right axis"
    else:
        ax.legend(loc="upper right")
    return {"ax": ax, "x": extent(mu[0], mu[-1], "chemical potentials", " t"),
            "y": extent(min(low.min(), 0.0), max(top.max(), 0.0), "conductivities", " e^2/h"),
            "facts": facts}


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


def plot_ldos(r, fig, args):
    e = energies(r, "/ldos/energy")
    rows = r.array("/ldos/rows", 1, kind="iu")
    rho = r.array("/ldos/rho", 2, shape=(len(rows), len(e)))
    shown = np.unique(np.linspace(0, len(rows) - 1, min(8, len(rows))).astype(int))
    places = row_places(r, rows[shown], "/ldos/rows")
    facts = {"rows": len(rows), "rows_shown": places}
    mean_label = f"mean of {len(rows)} rows"
    if r.has("/green/rho"):
        # Exact -Im G_jj(E + i eta)/pi (dashed) over the KPM LDOS of the same moments with
        # the Lorentz kernel of the same broadening (solid): they differ by the kernel's
        # shape, drawn in the panel below as |KPM - exact|.
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
        ax, diff_ax = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
        ax.set_label("main")
        diff_ax.set_label("difference")
        diff = np.abs(kpm - grho)
        for j, i in enumerate(shown):
            ax.plot(ge, kpm[i], lw=1.0, color=f"C{j}", label=places[j]["label"])
            ax.plot(ge, grho[i], lw=1.0, ls="--", color=f"C{j}")
            diff_ax.plot(ge, diff[i], lw=1.0, color=f"C{j}")
        drawn = np.concatenate([kpm[shown].ravel(), grho[shown].ravel()])
        if len(rows) > 1:
            ax.plot(ge, kpm.mean(axis=0), color="k", lw=1.8, label=mean_label)
            ax.plot(ge, grho.mean(axis=0), color="k", lw=1.8, ls="--")
            diff_ax.plot(ge, np.abs(kpm.mean(axis=0) - grho.mean(axis=0)), color="k", lw=1.8)
        ax.plot([], [], color="gray", lw=1.0, label=f"KPM, Lorentz λ = {lam:.3g} (η = λa/M)")
        ax.plot([], [], color="gray", lw=1.0, ls="--", label=f"exact −Im G/π, η = {eta:.3g} t")
        diff_ax.set_xlabel("energy E (units of t)")
        diff_ax.set_ylabel("|KPM − exact| (1/t)")
        curve_scale(diff_ax, args, diff[shown], "the difference |KPM − exact|")
        facts.update(max_abs_difference=float(diff.max()), eta=eta, lorentz_lambda=lam)
        e, rho = ge, kpm
    else:
        ax = fig.add_subplot(1, 1, 1, label="main")
        for j, i in enumerate(shown):
            ax.plot(e, rho[i], lw=1.0, label=places[j]["label"])
        if len(rows) > 1:
            ax.plot(e, rho.mean(axis=0), color="k", lw=1.8, label=mean_label)
        drawn = rho[shown].ravel()
        ax.set_xlabel("energy E (units of t)")
    ax.set_ylabel("local DOS ρ_j(E) (1/t)")
    ax.set_xlim(e[0], e[-1])
    curve_scale(ax, args, drawn, "'/ldos/rho'" if not r.has("/green/rho") else "the LDOS curves")
    ax.legend(loc="best", fontsize=8)
    return {"ax": ax, "x": extent(e[0], e[-1], "energies", " t"),
            "y": extent(min(drawn.min(), 0), drawn.max(), "LDOS values", " 1/t"), "facts": facts}


def plot_map(r, fig, args):
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
    ax_map.set_label("main")
    ax_curve.set_label("site curves")
    scale = colour_norm(args, rho, "'/ldos_map/rho'", float(rho.max()), {})  # linear: from min to max
    shown = np.clip(rho, scale["norm"].vmin, None) if args.log else rho
    honeycomb = geometry(r.text("/ldos_map", "model", "ti")).honeycomb
    if honeycomb:
        # cell (m, n) at m a1 + n a2 (plus half a bond to the B site), a1 = (sqrt3, 0), a2 = (sqrt3/2, 3/2)
        m, n = np.meshgrid(np.arange(rho.shape[0]), np.arange(rho.shape[1]), indexing="ij")
        x, y = np.sqrt(3) * m + np.sqrt(3) / 2 * n, 1.5 * n + 0.5
        im = ax_map.scatter(x.ravel(), y.ravel(), c=shown.ravel(), s=18, cmap="viridis", **scale)
        ax_map.set_xlabel("x (C-C distances)")
        ax_map.set_ylabel("y (C-C distances)")
        xs, ys = (x.min() - 1, x.max() + 1), (y.min() - 1, y.max() + 1)
    else:
        im = ax_map.imshow(shown.T, origin="lower", cmap="viridis", interpolation="nearest", **scale)
        ax_map.set_xlabel("x (lattice constants)")
        ax_map.set_ylabel("y (lattice constants)")
        xs, ys = (-0.5, rho.shape[0] - 0.5), (-0.5, rho.shape[1] - 0.5)
    dots = dot_outlines(r, ax_map, rho.shape, graphene=honeycomb)
    if dots:
        ax_map.plot([], [], color="w", lw=0.9, ls="--", path_effects=OUTLINED, label=f"dots, r = {dots[0][2]:g}")
        ax_map.legend(loc="upper left", fontsize=7, framealpha=0.7)
    ax_map.set_aspect("equal")
    ax_map.set_title(f"layer z = {layer}, E = {energy:g} t")
    fig.colorbar(im, ax=ax_map, label=f"LDOS summed over {orbitals} orbitals (1/t)" + (", log scale" if args.log else ""))
    per_site = rows_rho.reshape(-1, orbitals, len(e)).sum(axis=1)
    ax_curve.plot(e, per_site.mean(axis=0), color="k", lw=1.4, label="layer mean")
    hi = np.unravel_index(np.argmax(rho), rho.shape)
    lo = np.unravel_index(np.argmin(rho), rho.shape)
    for at, what in ((hi, "max"), (lo, "min")):
        where = f"cell ({int(at[0])}, {int(at[1])})" if honeycomb else f"site ({int(at[0])}, {int(at[1])}, {layer})"
        ax_curve.plot(e, per_site[at[0] * rho.shape[1] + at[1]], lw=1.0, label=f"{where}, {what} of the map")
    ax_curve.axvline(energy, color="C3", ls="--", lw=1.0, label="map energy")
    ax_curve.set_xlabel("energy E (units of t)")
    ax_curve.set_ylabel("site LDOS (1/t)")
    ax_curve.set_xlim(e[0], e[-1])
    curve_scale(ax_curve, args, per_site, "'/ldos/rho'")
    ax_curve.legend(loc="upper right", fontsize=8)
    return {"ax": ax_map, "x": extent(*xs, "map's x", ""), "y": extent(*ys, "map's y", ""),
            "facts": {"map_shape": list(rho.shape), "layer": layer, "energy": energy, "dots": dots}}


def dot_outlines(r, ax, shape, graphene):
    """Dashed circles where the quantum dots of /model sit (models.md §2: centred on each P x P
    superlattice cell, at ((x mod P), (y mod P)) = ((P-1)/2, (P-1)/2); §3: graphene's at
    (iP + floor(P/2)) a1 + (jP + floor(P/2)) a2 + (a1 + a2)/3), radius dot_radius, in the map's
    coordinates; none without dots. Returns [[x, y, r], ...]."""
    period = r.number("/model", "dot_period", 0, integer=True)
    radius = r.number("/model", "dot_radius", 0)
    if period <= 0 or radius <= 0 or not r.number("/model", "dot_potential", 0):
        return []
    if shape[0] % period or shape[1] % period:
        raise r.bad(f"attribute 'dot_period' of '/model' ({period}) does not divide the map's {shape[0]}x{shape[1]} sites")
    dots = []
    for i in range(shape[0] // period):
        for j in range(shape[1] // period):
            if graphene:  # a1 = (sqrt3, 0), a2 = (sqrt3/2, 3/2); (a1 + a2)/3 = (sqrt3/2, 1/2)
                m, n = i * period + period // 2, j * period + period // 2
                x, y = math.sqrt(3) * m + math.sqrt(3) / 2 * n + math.sqrt(3) / 2, 1.5 * n + 0.5
            else:
                x, y = i * period + (period - 1) / 2, j * period + (period - 1) / 2
            ax.add_patch(matplotlib.patches.Circle((x, y), radius, fill=False, ec="w", lw=0.9, ls="--", path_effects=OUTLINED))
            dots.append([x, y, radius])
    return dots


def plot_spectral(r, fig, args):
    ax = fig.add_subplot(1, 1, 1, label="main")
    e = energies(r, "/spectral/energy")
    a = r.array("/spectral/A", 2, shape=(None, len(e)))
    nk = a.shape[0]
    on_path = r.has("/spectral/path_distance")
    dist = r.array("/spectral/path_distance", 1, shape=(nk,)) if on_path else np.arange(nk)
    if len(dist) > 1:
        mids = (dist[1:] + dist[:-1]) / 2
        xedges = np.concatenate([[dist[0] - (mids[0] - dist[0])], mids, [dist[-1] + (dist[-1] - mids[-1])]])
    else:
        xedges = np.array([dist[0] - 0.5, dist[0] + 0.5])
    emids = (e[1:] + e[:-1]) / 2
    eedges = np.concatenate([[e[0] - (emids[0] - e[0])], emids, [e[-1] + (e[-1] - emids[-1])]])
    positive = np.clip(a, 0, None)
    vmax = float(np.percentile(a, 99.5))
    scale = colour_norm(args, a, "'/spectral/A'", vmax, {"vmin": 0, "vmax": vmax})
    shown = np.clip(positive, scale["norm"].vmin, None) if args.log else positive
    # Rasterized inside vector output: a PDF/SVG of nk x K cells would be slow to open.
    mesh = ax.pcolormesh(xedges, eedges, shown.T, cmap="magma", shading="flat", rasterized=True, **scale)
    fig.colorbar(mesh, ax=ax, label="A(k, E) (1/t per state)" + (", log scale" if args.log else ""))
    if r.has("/spectral/bands"):
        bands = r.array("/spectral/bands", 2, shape=(nk, None))
        for b in range(bands.shape[1]):
            ax.plot(dist, bands[:, b], color="c", lw=0.6, alpha=0.8, ls="--",
                    label="bands of the Bloch Hamiltonian" if b == 0 else None)
        ax.legend(loc="upper right", fontsize=8)
    r.group("/spectral")
    tick_labels = r.text("/spectral", "tick_labels", "")
    facts = {"momenta": nk}
    if r.has("/spectral/ticks") and tick_labels:
        ticks = r.array("/spectral/ticks", 1, kind="iu")
        labels = [GREEK.get(s, s) for s in tick_labels.split(",")]
        if len(labels) != len(ticks) or np.any(ticks < 0) or np.any(ticks >= nk):
            raise r.bad(f"dataset '/spectral/ticks' does not match its {len(labels)} tick labels and {nk} momenta")
        ax.set_xticks(dist[ticks])
        ax.set_xticklabels(labels)
        for t in dist[ticks]:
            ax.axvline(t, color="w", lw=0.5, alpha=0.5)
        ax.set_xlabel(f"momentum k along {'–'.join(labels)} (1/a)" if on_path else "momentum index")
        facts["path"] = labels
    elif on_path:
        ax.set_xlabel("momentum k, distance along the points (1/a)")
    else:
        ax.set_xlabel("momentum index")
    ax.set_ylabel("energy E (units of t)")
    ax.set_ylim(e[0], e[-1])
    return {"ax": ax, "x": extent(xedges[0], xedges[-1], "momenta", " 1/a" if on_path else ""),
            "y": extent(e[0], e[-1], "energies", " t"), "facts": facts}


def levels(values, residuals, scale):
    """Indices of the eigenvalues grouped into levels: neighbours closer than the sum of
    their residual norms may be one degenerate level (each computed eigenvalue of a Hermitian
    H lies within its residual norm of an exact one), with a floor of 1e-10 of the spectrum's
    scale for pairs that agree to rounding."""
    groups = [[0]]
    for i in range(1, len(values)):
        if values[i] - values[i - 1] <= residuals[i] + residuals[i - 1] + 1e-10 * scale:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def plot_eigs(r, fig, args):
    if args.log:
        raise BadInput("--log: the eigs picture draws weights in [0, 1] on a linear axis; --log is for the "
                       "kinds dos, ldos, map and spectral")
    ax = fig.add_subplot(1, 1, 1, label="main")
    values = r.array("/eigs/values", 1)
    k = len(values)
    if np.any(np.diff(values) < 0):
        raise r.bad("dataset '/eigs/values' is not ascending")
    residuals = r.array("/eigs/residuals", 1, shape=(k,)) if r.has("/eigs/residuals") else np.zeros(k)
    scale = r.number("/eigs", "energy_scale", 0.0) or max(float(np.abs(values).max()), 1.0)
    if r.has("/eigs/layer_weight"):  # what the file holds decides the picture, not the model's name
        w = r.array("/eigs/layer_weight", 2, shape=(k, None))
        nz = w.shape[1]
        parts = [(w[:, 0], "top layer z = 0"), (w[:, -1], f"bottom layer z = {nz - 1}")] if nz > 1 else \
                [(w[:, 0], "layer z = 0")]
        what = "weight of the level on the layer"
    elif r.has("/eigs/sublattice_weight"):
        w = r.array("/eigs/sublattice_weight", 2, shape=(k, 2))
        parts = [(w[:, 0], "sublattice A"), (w[:, 1], "sublattice B")]
        what = "weight of the level on the sublattice"
    else:  # a model without layers or sublattices (read from a file): the levels alone
        parts, what = [], "levels (the model has no layers or sublattices to weigh)"
    if args.dos:
        check_input_path(args.dos)
        try:
            g = h5py.File(args.dos, "r")
        except Exception:
            raise BadInput(f"cannot read '{args.dos}': not an HDF5 file, or a damaged one") from None
        with g:
            d = Result(args.dos, g)
            e = energies(d, "/dos/energy")
            rho = d.array("/dos/rho", 1, shape=(len(e),))
        behind = ax.twinx()
        behind.set_label("--dos")
        behind.fill_between(e, 0, rho, color="0.85", lw=0, label="KPM DOS (--dos)")
        behind.set_ylabel("DOS ρ(E) (states per state per t)", color="0.45")
        # Its axis fits the DOS over the energies shown (the eigenvalues' span, or --xlim).
        pad = 0.05 * max(values[-1] - values[0], 1e-3)
        lo, hi = args.xlim or (values[0] - pad, values[-1] + pad)
        seen = rho[(e >= lo) & (e <= hi)]
        behind.set_ylim(0, 1.1 * seen.max() if seen.size and seen.max() > 0 else None)
        ax.set_zorder(behind.get_zorder() + 1)
        ax.patch.set_visible(False)
    # A degenerate level is drawn once, at its mean weights: within a degenerate level each
    # vector's weight depends on the basis the solver chose, the level's mean does not.
    groups = levels(values, residuals, scale)
    level_e = np.array([values[g].mean() for g in groups])
    degeneracy = [len(g) for g in groups]
    means = [np.array([weight[g].mean() for g in groups]) for weight, _ in parts]
    for (weight, label), mean, marker, colour in zip(parts, means, ("^", "v"), ("C0", "C3")):
        ax.scatter(level_e, mean, s=36, marker=marker, color=colour, edgecolors="k", linewidths=0.3, label=label, zorder=3)
    top = np.maximum.reduce(means) if means else np.full(len(groups), 0.04)  # above the ticks
    for x, y, g in zip(level_e, top, degeneracy):
        if g > 1:
            ax.annotate(f"×{g}", (x, y), xytext=(0, 5), textcoords="offset points", ha="center", fontsize=7)
    # Every eigenvalue as a tick on the energy axis, so that none hides behind another.
    ax.vlines(values, 0, 0.04, transform=ax.get_xaxis_transform(), color="k", lw=0.8,
              label=f"all {k} eigenvalues, {len(groups)} levels (×g: g-fold degenerate)")
    ax.set_xlabel("energy E (units of t)")
    ax.set_ylabel(what)
    ax.set_ylim(-0.02, 1.12)
    pad = 0.05 * max(values[-1] - values[0], 1e-3)
    ax.set_xlim(values[0] - pad, values[-1] + pad)
    # Above the panel: markers may sit anywhere in it.
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    return {"ax": ax, "x": extent(values[0] - pad, values[-1] + pad, "eigenvalues", " t"), "y": extent(0, 1, "weights", ""),
            "facts": {"eigenvalues": k, "levels": len(groups), "degeneracies": degeneracy,
                      "series": [label for _, label in parts]}}


PLOTS = {"dos": plot_dos, "ldos": plot_ldos, "map": plot_map, "spectral": plot_spectral, "eigs": plot_eigs,
         "conductivity": plot_conductivity}


def apply_limits(drawn, args):
    """--xlim/--ylim on the main panel; a range that shows none of the drawn data is refused."""
    ax = drawn["ax"]
    for option, lim, (lo, hi, what, unit), setter in (("--xlim", args.xlim, drawn["x"], ax.set_xlim),
                                                      ("--ylim", args.ylim, drawn["y"], ax.set_ylim)):
        if lim is None:
            continue
        if option == "--ylim" and ax.get_yscale() == "log" and lim[0] <= 0:
            raise BadInput(f"--ylim {lim[0]:g}:{lim[1]:g} with --log: LO must be above 0 (a log axis)")
        if lim[1] < lo or lim[0] > hi:
            raise BadInput(f"{option} {lim[0]:g}:{lim[1]:g} shows none of the drawn {what}: "
                           f"give a range that overlaps [{lo:.4g}, {hi:.4g}]{unit}")
        setter(*lim)


def describe(fig, kind, output, fmt, dpi, facts):
    """What the figure shows, as plain data (--describe): per axes its role, labels, limits,
    scales, lines with data, legend entries, texts and colour scales."""
    axes = []
    for ax in fig.axes:
        legend = ax.get_legend()
        colours = []
        for m in list(ax.images) + list(ax.collections):
            if m.get_array() is not None:
                colours.append({"norm": "log" if isinstance(m.norm, LogNorm) else "linear",
                                "vmin": m.norm.vmin, "vmax": m.norm.vmax, "cmap": m.get_cmap().name})
        collections = []
        for c in ax.collections:
            count = len(c.get_segments()) if hasattr(c, "get_segments") else len(c.get_offsets()) \
                if type(c).__name__ == "PathCollection" else len(c.get_paths())
            collections.append({"type": type(c).__name__, "label": c.get_label(), "count": count})
        axes.append({"role": ax.get_label(), "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                     "xlim": list(ax.get_xlim()), "ylim": list(ax.get_ylim()),
                     "xscale": ax.get_xscale(), "yscale": ax.get_yscale(),
                     "lines": sum(1 for line in ax.get_lines() if len(line.get_xdata()) > 0),
                     "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
                     "xticklabels": [t.get_text() for t in ax.get_xticklabels()]
                     if isinstance(ax.xaxis.get_major_locator(), FixedLocator) else [],
                     "texts": [t.get_text() for t in ax.texts], "patches": len(ax.patches), "collections": collections,
                     "colour_scales": colours})
    suptitle = getattr(fig, "_suptitle", None)  # Figure.get_suptitle() is matplotlib >= 3.8
    suptitle = suptitle.get_text() if suptitle is not None else ""
    return {"output": output, "format": fmt, "kind": kind, "size_inches": list(fig.get_size_inches()), "dpi": dpi,
            "title": suptitle, "axes": axes, "facts": facts}


def plot(args):
    """Draws args.result into the output image; raises BadInput for an unusable file."""
    check_input_path(args.result)
    output, fmt = image_path(args)
    try:
        f = h5py.File(args.result, "r")
    except Exception:  # h5py raises OSError, but a damaged file can raise others
        raise BadInput(f"cannot read '{args.result}': not an HDF5 file, or a damaged one") from None
    try:
        with f:
            description = draw(args, Result(args.result, f), output, fmt)
    except OSError:  # HDF5 failed to read a damaged object; its text may quote the file
        raise BadInput(f"cannot read '{args.result}': damaged HDF5 data") from None
    if args.describe:
        print(json.dumps(description, default=float))
    else:
        print(f"plot written to {output}")


def draw(args, r, output, fmt):
    have = {"eigs": r.has("/eigs/values"), "conductivity": r.has("/conductivity/sigma"), "spectral": r.has("/spectral/A"),
            "map": r.has("/ldos_map/rho"), "ldos": r.has("/ldos/rho"), "dos": r.has("/dos/rho")}
    kind = args.kind or next((k for k in have if have[k]), None)  # the richest content first
    if kind is None or not have[kind]:
        raise BadInput(f"'{args.result}' has no {kind or 'plottable'} data "
                       f"(has: {', '.join(k for k, v in have.items() if v) or 'nothing'})")
    if args.dos and kind != "eigs":
        raise BadInput(f"--dos draws a DOS behind eigenvalues: it needs the kind eigs, not {kind}")
    title = title_of(r) if args.title is None else args.title
    if kind == "eigs":
        check_eigs_found(r)
    size = SIZES["green" if kind == "ldos" and r.has("/green/rho") else kind]
    fig = plt.figure(figsize=size)
    drawn = PLOTS[kind](r, fig, args)
    apply_limits(drawn, args)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.96 if title else 1))  # room for the suptitle
    try:
        fig.savefig(output, dpi=args.dpi, format=fmt)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0][:200]
        raise CannotWrite(f"cannot write '{output}': {reason}") from None
    return describe(fig, kind, output, fmt, args.dpi, drawn["facts"]) if args.describe else None


class Parser(argparse.ArgumentParser):
    def error(self, message):
        """Every refused option is one line on stderr and exit 2 (no usage block)."""
        self.exit(2, f"kpm-plot: error: {message} (kpm-plot --help lists the options)\n")


def limits(option, text):
    """--xlim/--ylim LO:HI: two finite numbers, LO < HI."""
    parts = text.split(":")
    try:
        lo, hi = (float(v) for v in parts) if len(parts) == 2 else (math.nan, math.nan)
    except ValueError:
        lo = hi = math.nan
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"{option} '{text}': expected LO:HI, two finite numbers with LO < HI")
    if not lo < hi:
        raise ValueError(f"{option} {text}: LO must be below HI (LO:HI, two finite numbers with LO < HI)")
    return lo, hi


def check_options(args):
    """Turns the option texts into values; a ValueError names the option and what it allows."""
    try:
        args.dpi = int(args.dpi)
    except ValueError:
        raise ValueError(f"--dpi '{args.dpi}': not an integer (allowed range {DPI_RANGE[0]} .. {DPI_RANGE[1]})") from None
    if not DPI_RANGE[0] <= args.dpi <= DPI_RANGE[1]:
        raise ValueError(f"--dpi {args.dpi}: allowed range {DPI_RANGE[0]} .. {DPI_RANGE[1]}")
    args.xlim = limits("--xlim", args.xlim) if args.xlim is not None else None
    args.ylim = limits("--ylim", args.ylim) if args.ylim is not None else None
    if args.title is not None:
        if len(args.title) > MAX_TEXT or not args.title.isprintable():
            raise ValueError(f"--title: at most {MAX_TEXT} printable characters")
        fig = plt.figure()
        fig.text(0, 0, args.title)
        try:
            fig.canvas.draw()  # matplotlib reads $...$ as math: a broken formula fails here, not at savefig
        except ValueError:
            raise ValueError("--title: the text between $ signs is not math that matplotlib can typeset "
                             "(write \\$ for a dollar sign)") from None
        finally:
            plt.close(fig)


# Options whose value may start with '-' (--xlim -1:1): argparse would take it for an option.
VALUE_MAY_START_WITH_DASH = ("--xlim", "--ylim", "--title")


def main(argv=None):
    p = Parser(prog="kpm-plot", description=__doc__.split("\n\n")[0],
               formatter_class=argparse.RawDescriptionHelpFormatter,
               epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("result", help="HDF5 result file of kpm-dos or kpm-eigs")
    p.add_argument("-o", "--output", help="image file (.png, .pdf, .svg; a name without a suffix gets --format's, "
                   "png by default); default RESULT with that suffix for its extension; never an input file")
    p.add_argument("--kind", choices=["dos", "ldos", "map", "spectral", "eigs", "conductivity"], help="what to draw (default: the richest content)")
    p.add_argument("--dos", help="with eigs: a kpm-dos result of the same system whose DOS is drawn behind the eigenvalues")
    p.add_argument("--xlim", metavar="LO:HI", help="x range of the main panel (energy; k in 1/a for spectral; x for map)")
    p.add_argument("--ylim", metavar="LO:HI", help="y range of the main panel (DOS; weight for eigs; energy for spectral; y for map)")
    p.add_argument("--log", action="store_true", help="log y axis for dos/ldos, log colour scale for map/spectral")
    p.add_argument("--format", choices=FORMATS, help="image format (default: the suffix of -o, else png)")
    p.add_argument("--dpi", default="100", help=f"dots per inch of raster output, {DPI_RANGE[0]} .. {DPI_RANGE[1]} (default 100)")
    p.add_argument("--title", help="the figure's title instead of the model summary ('' for none; $...$ is math)")
    p.add_argument("--describe", action="store_true", help="print a JSON description of the figure instead of the "
                   "'plot written to' line")
    argv = list(sys.argv[1:] if argv is None else argv)
    for i in range(len(argv) - 2, -1, -1):
        if argv[i] in VALUE_MAY_START_WITH_DASH and argv[i + 1].startswith("-"):
            argv[i:i + 2] = [f"{argv[i]}={argv[i + 1]}"]
    args = p.parse_args(argv)
    try:
        check_options(args)
    except ValueError as exc:
        p.error(str(exc))
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
