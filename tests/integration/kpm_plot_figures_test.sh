#!/usr/bin/env bash
# kpm-plot's figures for publication (issue 33), checked through --describe (the figure as
# JSON: axes limits, scales, labels, lines, legend, colour scales, facts) rather than pixels:
#  - --xlim/--ylim/--log/--format/--dpi/--title do what they say on every kind of result,
#    and every bad value is one line on stderr, exit 2, naming the option, writing no image;
#  - LDOS curves are labelled by site, orbital and surface (ti), cell, sublattice and
#    position (graphene), cell and Wannier orbital (hr), from the spec's row order; kpm-dos's
#    own `--ldos site:...` selection is the independent witness of that order;
#  - A(k, E) has its k axis in 1/a with the path's points named;
#  - the kpm-eigs picture accounts for every eigenvalue (a tick each; levels x degeneracy),
#    with the top and bottom layers (sublattices A, B) as two marker series;
#  - a --green result has a difference panel |KPM - exact| below the LDOS curves;
#  - a --conductivity result draws sigma_ab(mu) in e^2/h with its error band and the run's DOS.
# kpm_plot_figures_test.sh KPM_DOS KPM_PLOT KPM_EIGS SOURCE_DIR
set -u
dos="$1"; plot="$2"; eigs="$3"; src="$4"
source "$(dirname "$0")/../support/script_lib.sh"
if ! /usr/bin/python3 -c 'import h5py, matplotlib' 2>/dev/null; then
  echo "FAIL: /usr/bin/python3 lacks h5py or matplotlib (scripts/setup_debian.sh installs python3-h5py, python3-numpy, python3-matplotlib)"; exit 1
fi

# draw NAME FILE ARGS...: kpm-plot FILE ARGS --describe exits 0; the description is NAME.json.
draw() {
  local name="$1" file="$2"; shift 2
  if "$plot" "$work/$file" -o "$work/$name.png" "$@" --describe > "$work/$name.json" 2> "$work/$name.err"; then
    echo "ok: $name: kpm-plot exits 0"
  else
    echo "FAIL: $name: kpm-plot exits non-zero: $(head -c 300 "$work/$name.err")"; fail=1
  fi
}
# fact NAME JSON EXPR: the Python expression EXPR holds, with d the description of JSON,
# a its axes by role, w the work directory, h5 = h5py.File, np = numpy.
fact() {
  local name="$1" file="$2" expr="$3"
  if /usr/bin/python3 - "$work/$file.json" "$expr" "$work" <<'PY'
import json, sys, h5py, numpy as np
d = json.load(open(sys.argv[1]))
a = {x["role"]: x for x in d["axes"]}
w = sys.argv[3]
h5 = lambda name: h5py.File(f"{w}/{name}", "r")
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
  then echo "ok: $name"; else echo "FAIL: $name ($expr)"; fail=1; fi
}
# refused NAME WHY FILE ARGS...: exit 2, one line 'kpm-plot: error: ...' containing WHY, no image.
refused() {
  local name="$1" why="$2" file="$3"; shift 3
  "$plot" "$work/$file" -o "$work/$name.png" "$@" > "$work/$name.out" 2> "$work/$name.err"
  local rc=$?
  if [ $rc -eq 2 ] && [ "$(wc -l < "$work/$name.err")" -eq 1 ] && grep -q '^kpm-plot: error: ' "$work/$name.err" \
     && grep -qF -- "$why" "$work/$name.err" && [ ! -e "$work/$name.png" ] && [ ! -s "$work/$name.out" ]; then
    echo "ok: $name: refused (exit 2) saying '$why'"
  else
    echo "FAIL: $name: exit $rc, stderr: $(head -c 300 "$work/$name.err")"; fail=1
  fi
}

ti=(--model ti --moments 64 --quiet)
"$dos" "${ti[@]}" --lattice 4x4x4 --disorder 1 --realizations 2 --vectors 2 --output "$work/dos.h5" > /dev/null
"$dos" "${ti[@]}" --lattice 3x3x2 --ldos 41,71,0 --output "$work/ldos.h5" > /dev/null
"$dos" "${ti[@]}" --lattice 3x3x2 --ldos site:1,2,0 --output "$work/site.h5" > /dev/null
"$dos" --model graphene --lattice 3x3 --moments 64 --quiet --ldos site:1,2 --output "$work/gsite.h5" > /dev/null
"$dos" --model hr --model-file "$src/inputs/ti_hr.dat" --lattice 3x3x2 --boundary ppo --moments 64 --quiet \
  --ldos 41,71 --output "$work/hr.h5" > /dev/null
"$dos" "${ti[@]}" --lattice 4x4x2 --ldos layer:0 --ldos-map-energy 0.2 --dot-period 4 --dot-radius 1.5 \
  --dot-potential 0.5 --dot-depth 1 --output "$work/map.h5" > /dev/null
"$dos" --model graphene --lattice 6x6 --moments 64 --quiet --ldos layer:0 --ldos-map-energy 0.3 --dot-period 6 \
  --dot-radius 2.5 --dot-potential 0.5 --output "$work/gmap.h5" > /dev/null
"$dos" "${ti[@]}" --lattice 4x4x2 --k-path M-G-X --output "$work/spectral.h5" > /dev/null
"$dos" "${ti[@]}" --lattice 3x3x2 --ldos 0,5,17 --green 0.1 --kernel lorentz --energy-grid -3:3:31 \
  --output "$work/green.h5" > /dev/null
# dots on the top layer only: the top and bottom surfaces differ
"$eigs" --model ti --lattice 4x4x4 --dot-period 2 --dot-radius 0.8 --dot-potential 0.3 --dot-depth 1 \
  --window -1.2:1.2 --method dense --threads 1 --quiet --output "$work/eigs.h5" > /dev/null
"$eigs" --model graphene --lattice 4x4 --window -1:1 --method dense --threads 1 --quiet --output "$work/geigs.h5" > /dev/null
for f in dos ldos site gsite hr map gmap spectral green eigs geigs; do
  [ -s "$work/$f.h5" ] || { echo "FAIL: making $f.h5"; fail=1; }
done

# ---- DOS: defaults, limits, log, title, formats, dpi ----
draw dos dos.h5 --kind dos
fact "dos default: linear axes from 0, one curve, the model in the title" dos \
  "d['kind'] == 'dos' and d['format'] == 'png' and a['main']['xscale'] == a['main']['yscale'] == 'linear' and a['main']['ylim'][0] == 0 and a['main']['lines'] == 1 and d['title'].startswith('ti 4x4x4')"
fact "dos default: x spans the energy grid" dos \
  "a['main']['xlim'] == [float(h5('dos.h5')['/dos/energy'][0]), float(h5('dos.h5')['/dos/energy'][-1])]"
draw dos_zoom dos.h5 --xlim -1:1 --ylim 1e-3:1 --log
fact "--xlim -1:1 --ylim 1e-3:1 --log: exactly those limits on a log y axis" dos_zoom \
  "a['main']['xlim'] == [-1, 1] and a['main']['ylim'] == [1e-3, 1] and a['main']['yscale'] == 'log' and a['main']['xscale'] == 'linear'"
draw dos_log dos.h5 --log
fact "--log alone: the axis reaches down to max(smallest positive, 1e-6 x largest) of the DOS" dos_log \
  "(lambda r: a['main']['ylim'][0] == max(r[r > 0].min(), 1e-6 * r.max()))(h5('dos.h5')['/dos/rho'][...])"
draw dos_title dos.h5 --title 'Slab, $W = 1\,t$'
fact "--title replaces the model summary" dos_title "d['title'] == 'Slab, \$W = 1\\\\,t\$'"
draw dos_notitle dos.h5 --title ''
fact "--title '' draws no title" dos_notitle "d['title'] == ''"
"$plot" "$work/dos.h5" -o "$work/vec" --format pdf --describe > "$work/pdf.json" 2>&1
fact "--format pdf adds .pdf to a bare -o and writes a PDF" pdf \
  "d['format'] == 'pdf' and d['output'] == w + '/vec.pdf' and open(w + '/vec.pdf', 'rb').read(5) == b'%PDF-'"
fact "PDF text in embedded TrueType (editable, what journals ask), no Type 3 fonts" pdf \
  "(lambda b: b'/Type3' not in b and (b'/CIDFontType2' in b or b'/TrueType' in b))(open(w + '/vec.pdf', 'rb').read())"
"$plot" "$work/spectral.h5" -o "$work/ak.pdf" > /dev/null 2>&1
fact "A(k, E) in a PDF: the cells one embedded image (rasterized), not nk x K vector patches" pdf \
  "open(w + '/ak.pdf', 'rb').read().count(b'/Subtype /Image') >= 1"
"$plot" "$work/dos.h5" -o "$work/vec.svg" --describe > "$work/svg.json" 2>&1
fact "the suffix .svg picks SVG, its text kept as text" svg \
  "d['format'] == 'svg' and b'<svg' in open(w + '/vec.svg', 'rb').read(400) and b'energy E' in open(w + '/vec.svg', 'rb').read()"
"$plot" "$work/dos.h5" -o "$work/small.png" --dpi 50 > /dev/null 2>&1
fact "--dpi 50: a 400x250 PNG (8x5 inches)" dos \
  "__import__('struct').unpack('>II', open(w + '/small.png', 'rb').read(24)[16:24]) == (400, 250)"

# ---- every bad value: one line, exit 2, the option and what it allows ----
refused xlim_order "--xlim 1:0: LO must be below HI" dos.h5 --xlim 1:0
refused xlim_equal "--xlim 1:1: LO must be below HI" dos.h5 --xlim 1:1
refused xlim_text "--xlim 'a:b': expected LO:HI, two finite numbers" dos.h5 --xlim a:b
refused xlim_one "--xlim '3': expected LO:HI" dos.h5 --xlim 3
refused xlim_nan "--xlim 'nan:1': expected LO:HI, two finite numbers" dos.h5 --xlim nan:1
refused ylim_inf "--ylim '0:inf': expected LO:HI" dos.h5 --ylim 0:inf
refused ylim_log "--ylim 0:1 with --log: LO must be above 0" dos.h5 --ylim 0:1 --log
refused xlim_outside "--xlim 20:30 shows none of the drawn energies: give a range that overlaps [" dos.h5 --xlim 20:30
refused ylim_outside "--ylim 5:6 shows none of the drawn DOS values" dos.h5 --ylim 5:6
refused dpi_text "--dpi 'many': not an integer (allowed range 10 .. 1000)" dos.h5 --dpi many
refused dpi_big "--dpi 5000: allowed range 10 .. 1000" dos.h5 --dpi 5000
refused format_bad "argument --format: invalid choice: 'jpg'" dos.h5 --format jpg
refused suffix_bad "-o '$work/x.jpg': '.jpg' is not an image format this tool writes (allowed: .png, .pdf, .svg)" dos.h5 -o "$work/x.jpg"
refused format_disagrees "--format pdf disagrees with the suffix of -o '$work/format_disagrees.png'" dos.h5 --format pdf
refused title_math "--title: the text between \$ signs is not math" dos.h5 --title '$\nosuchcommand$'
refused title_control "--title: at most 256 printable characters" dos.h5 --title $'a\tb'
refused eigs_log "--log: the eigs picture draws weights in [0, 1]" eigs.h5 --log
refused dos_not_eigs "--dos draws a DOS behind eigenvalues: it needs the kind eigs, not dos" dos.h5 --dos "$work/dos.h5"
cp "$work/dos.h5" "$work/zero.h5"
/usr/bin/python3 -c 'import h5py, sys; f = h5py.File(sys.argv[1], "r+"); f["/dos/rho"][...] = 0.0; del f["/dos/rho_stderr"]' "$work/zero.h5"
refused log_nonpositive "--log: '/dos/rho' has no positive value to draw on a log scale" zero.h5 --log
for n in xlim_order dpi_text format_bad; do
  if grep -q -e Traceback -e usage: "$work/$n.err"; then echo "FAIL: $n: usage block or traceback"; fail=1; fi
done

# ---- LDOS: each curve labelled by where its row sits (models.md row order) ----
# ti 3x3x2: site = z + 2 (y + 3 x), row = o + 4 site: 41 = site 10 orbital 1 = (1, 2, 0), top;
# 71 = site 17 orbital 3 = (2, 2, 1), bottom (Nz = 2); 0 = (0, 0, 0) orbital 0, top.
draw ldos ldos.h5 --kind ldos
fact "ldos: rows 41, 71, 0 labelled by site, orbital and surface" ldos \
  "a['main']['legend'][:3] == ['site (1, 2, 0) orbital 1 (top)', 'site (2, 2, 1) orbital 3 (bottom)', 'site (0, 0, 0) orbital 0 (top)'] and a['main']['legend'][3] == 'mean of 3 rows'"
fact "ldos: the facts give each row's site, orbital and position" ldos \
  "[(p['row'], p['site'], p['orbital'], p['position']) for p in d['facts']['rows_shown']] == [(41, [1, 2, 0], 1, [1, 2, 0]), (71, [2, 2, 1], 3, [2, 2, 1]), (0, [0, 0, 0], 0, [0, 0, 0])]"
fact "ldos: 3 curves and their mean, y from 0, energy on x" ldos \
  "a['main']['lines'] == 4 and a['main']['ylim'][0] == 0 and a['main']['xlabel'].startswith('energy E')"
draw site site.h5 --kind ldos
fact "kpm-dos --ldos site:1,2,0 gives the rows of site (1, 2, 0), orbitals 0..3 (the witness of the order)" site \
  "a['main']['legend'][:4] == ['site (1, 2, 0) orbital %d (top)' % o for o in range(4)]"
draw gsite gsite.h5 --kind ldos
fact "graphene --ldos site:1,2: cell (1, 2) A and B at m a1 + n a2 (+ (0, 1) for B)" gsite \
  "a['main']['legend'][:2] == ['cell (1, 2) A, r = (3.46, 3.00)', 'cell (1, 2) B, r = (3.46, 4.00)'] and [p['orbital'] for p in d['facts']['rows_shown']] == ['A', 'B']"
draw hr hr.h5 --kind ldos
fact "hr (ti_hr.dat, 4 Wannier orbitals): cell and 1-based orbital of rows 41, 71" hr \
  "a['main']['legend'][:2] == ['cell (1, 2, 0) orbital 2', 'cell (2, 2, 1) orbital 4']"
draw ldos_log ldos.h5 --kind ldos --log --xlim -2:2
fact "ldos --log --xlim -2:2: log y, that x range" ldos_log "a['main']['yscale'] == 'log' and a['main']['xlim'] == [-2, 2] and a['main']['ylim'][0] > 0"

# ---- Green: the difference panel ----
draw green green.h5
fact "green: a main panel and a difference panel below it, sharing the energy axis" green \
  "set(a) == {'main', 'difference'} and a['difference']['xlim'] == a['main']['xlim'] and a['difference']['ylabel'] == '|KPM − exact| (1/t)' and d['size_inches'] == [8.0, 6.5]"
fact "green: KPM and exact for 3 rows plus the means (8 lines), 3 + 1 differences" green \
  "a['main']['lines'] == 8 and a['difference']['lines'] == 4 and a['main']['legend'][0] == 'site (0, 0, 0) orbital 0 (top)'"
fact "green: the largest difference is that of the stored data (KPM Lorentz vs exact), finite and > 0" green \
  "0 < d['facts']['max_abs_difference'] < float(h5('green.h5')['/green/rho'][...].max())"
draw green_log green.h5 --log --xlim -1:1
fact "green --log --xlim -1:1: both panels on log axes, both over -1..1" green_log \
  "a['main']['yscale'] == a['difference']['yscale'] == 'log' and a['main']['xlim'] == a['difference']['xlim'] == [-1, 1]"

# ---- map and A(k, E): colour scales, k axis ----
draw map map.h5 --kind map
fact "map: linear colour scale, the map's x and y in lattice constants" map \
  "a['main']['colour_scales'][0]['norm'] == 'linear' and a['main']['xlabel'] == 'x (lattice constants)' and a['main']['xlim'] == [-0.5, 3.5]"
draw map_log map.h5 --kind map --log --xlim 0:2 --ylim 0:2
fact "map --log --xlim 0:2 --ylim 0:2: log colour scale up to the map's largest value, that window" map_log \
  "a['main']['colour_scales'][0]['norm'] == 'log' and a['main']['colour_scales'][0]['vmax'] == float(h5('map.h5')['/ldos_map/rho'][...].max()) and a['main']['xlim'] == [0, 2] and a['main']['ylim'] == [0, 2] and a['<colorbar>']['yscale'] == 'log'"
fact "map: the dot of the 4x4 superlattice cell outlined at ((P-1)/2, (P-1)/2) = (1.5, 1.5), r = 1.5 (models.md §2)" map \
  "d['facts']['dots'] == [[1.5, 1.5, 1.5]] and a['main']['patches'] == 1 and a['main']['legend'] == ['dots, r = 1.5']"
fact "map: the site curves name their site (x, y, z)" map \
  "a['site curves']['legend'][1].startswith('site (') and a['site curves']['legend'][1].endswith(', 0), max of the map')"
draw gmap gmap.h5
fact "graphene map: the dot at (3 a1 + 3 a2) + (a1 + a2)/3 = (5 sqrt3, 5), r = 2.5 (models.md §3)" gmap \
  "len(d['facts']['dots']) == 1 and np.allclose(d['facts']['dots'][0], [5 * 3 ** 0.5, 5.0, 2.5], rtol=0, atol=1e-12) and a['main']['xlabel'] == 'x (C-C distances)'"
refused map_outside "--xlim 10:12 shows none of the drawn map's x" map.h5 --kind map --xlim 10:12
draw spectral spectral.h5
fact "spectral: k in 1/a along the named path M-Γ-X, energy on y" spectral \
  "a['main']['xlabel'] == 'momentum k along M–Γ–X (1/a)' and a['main']['xticklabels'] == ['M', 'Γ', 'X'] and a['main']['ylabel'] == 'energy E (units of t)'"
draw spectral_log spectral.h5 --log --ylim -2:2
fact "spectral --log --ylim -2:2: log colour scale from max(smallest positive, 1e-4 x top) to the top (99.5th percentile), energies -2..2" spectral_log \
  "(lambda c, A: c['norm'] == 'log' and c['vmax'] == np.percentile(A, 99.5) and c['vmin'] == max(A[A > 0].min(), 1e-4 * c['vmax']))(a['main']['colour_scales'][0], h5('spectral.h5')['/spectral/A'][...]) and a['main']['ylim'] == [-2, 2]"

# ---- kpm-eigs: every eigenvalue, two surfaces, degeneracies ----
draw eigs eigs.h5 --dos "$work/dos.h5"
fact "eigs: one tick per eigenvalue, the degeneracies add up to all of them" eigs \
  "(lambda k: d['facts']['eigenvalues'] == k and sum(d['facts']['degeneracies']) == k and [c['count'] for c in a['main']['collections'] if c['type'] == 'LineCollection'] == [k])(len(h5('eigs.h5')['/eigs/values']))"
fact "eigs: the top (z = 0) and bottom (z = 3) layers as two series of one marker per level" eigs \
  "[(c['label'], c['count']) for c in a['main']['collections'] if c['type'] == 'PathCollection'] == [('top layer z = 0', d['facts']['levels']), ('bottom layer z = 3', d['facts']['levels'])]"
fact "eigs: each degenerate level marked xg, one mark per level with g > 1" eigs \
  "a['main']['texts'] == ['×%d' % g for g in d['facts']['degeneracies'] if g > 1] and max(d['facts']['degeneracies']) > 1"
fact "eigs: Kramers degeneracy (models.md §6) makes every level of the ti slab even" eigs \
  "all(g % 2 == 0 for g in d['facts']['degeneracies'])"
fact "eigs: the --dos DOS drawn behind, on its own axis" eigs "a['--dos']['collections'][0]['label'] == 'KPM DOS (--dos)'"
draw geigs geigs.h5
fact "graphene eigs: sublattices A and B as the two series, every eigenvalue ticked" geigs \
  "[c['label'] for c in a['main']['collections'] if c['type'] == 'PathCollection'] == ['sublattice A', 'sublattice B'] and sum(d['facts']['degeneracies']) == len(h5('geigs.h5')['/eigs/values'])"
draw eigs_zoom eigs.h5 --xlim -0.5:0.5 --ylim 0:0.6
fact "eigs --xlim/--ylim: those limits" eigs_zoom "a['main']['xlim'] == [-0.5, 0.5] and a['main']['ylim'] == [0, 0.6]"
# ---- the Kubo-Bastin conductivity: sigma(mu) with its error band, in e^2/h ----
"$dos" --model graphene --lattice 12x12 --magnetic-flux 1/12 --moments 64 --vectors 3 --conductivity xy --quiet \
  --output "$work/cond.h5" > /dev/null 2>&1
draw cond cond.h5
fact "conductivity: the richest content by default, sigma_xy(mu) in e^2/h over mu in t, the error band, the run's DOS on its own axis, the flux in the title" cond \
  "d['kind'] == 'conductivity' and a['main']['xlabel'] == 'chemical potential μ (units of t)' and a['main']['ylabel'] == 'σ_xy (e²/h)' and a['main']['legend'] == ['σ_xy(μ), T = 0', '± 1 standard error (random vectors)', 'DOS ρ(E)'] and d['facts']['dos'] == 'ρ(E) on the right axis' and 'flux Φ = 1/12 h/e per cell' in d['title'] and d['facts']['points'] == len(h5('cond.h5')['/conductivity/sigma'])"
refused cond_log "--log: a conductivity changes sign" cond.h5 --log
exit $fail
