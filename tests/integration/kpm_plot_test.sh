#!/usr/bin/env bash
# kpm-plot renders every kind of result to an image of the documented size: the DOS with
# its error band, LDOS curves, the surface LDOS map and A(k, E) with bands; bad input fails;
# the image never overwrites an input, and the message names the file really written.
# kpm_plot_test.sh KPM_DOS KPM_PLOT [KPM_EIGS]
set -u
dos="$1"; plot="$2"; eigs="${3:-}"
source "$(dirname "$0")/../support/script_lib.sh"
if ! /usr/bin/python3 -c 'import h5py, matplotlib' 2>/dev/null; then
  echo "FAIL: /usr/bin/python3 lacks h5py or matplotlib (scripts/setup_debian.sh installs python3-h5py, python3-numpy, python3-matplotlib)"; exit 1
fi
size() { /usr/bin/python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(24); assert d[:8]==b'\x89PNG\r\n\x1a\n'; print('%dx%d' % struct.unpack('>II', d[16:24]))" "$1"; }
common=(--model ti --moments 64 --quiet)
"$dos" "${common[@]}" --lattice 6x6x4 --disorder 1 --realizations 3 --vectors 2 --output "$work/dos.h5" > /dev/null
"$dos" "${common[@]}" --lattice 6x6x4 --ldos 0-7 --output "$work/ldos.h5" > /dev/null
"$dos" "${common[@]}" --lattice 6x6x4 --ldos layer:0 --ldos-map-energy 0.5 --output "$work/map.h5" > /dev/null
"$dos" "${common[@]}" --lattice 6x6x4 --k-path M-G-X --output "$work/spectral.h5" > /dev/null
"$dos" --model graphene --lattice 6x6 --moments 64 --quiet --k-path G-K-M-G --output "$work/graphene.h5" > /dev/null
for case in "dos dos 800x500" "ldos ldos 800x500" "map map 1000x450" "spectral spectral 800x600" "graphene spectral 800x600"; do
  set -- $case
  "$plot" "$work/$1.h5" --kind "$2" -o "$work/$1.png" > "$work/$1.txt" 2>&1
  check "$1: kpm-plot exits 0" "[ $? -eq 0 ]"
  check "$1: PNG non-empty" "[ -s '$work/$1.png' ]"
  check "$1: PNG is $3" "[ \"\$(size '$work/$1.png')\" = '$3' ]"
done
"$plot" "$work/map.h5" -o "$work/auto.svg" > /dev/null 2>&1
check "default kind and SVG output" "[ $? -eq 0 ] && grep -q '<svg' '$work/auto.svg'"
"$plot" "$work/dos.h5" --kind spectral -o "$work/none.png" > "$work/bad.txt" 2>&1
check "missing kind is an error naming what the file has" "[ $? -ne 0 ] && grep -q 'has no spectral data' '$work/bad.txt'"
"$plot" "$work/nothing.h5" > "$work/bad.txt" 2>&1
check "unreadable file is an error" "[ $? -ne 0 ] && grep -q 'cannot read' '$work/bad.txt'"

# Untrusted input (issue 11): every unusable file is refused quickly with exit 2 and one
# line "kpm-plot: error: ..." on stderr, never a traceback, never the file's contents.
# refused NAME WHY FILE [ARGS...]
refused() {
  local name="$1" why="$2" file="$3"; shift 3
  timeout 20 "$plot" "$file" -o "$work/$name.png" "$@" > "$work/$name.out" 2> "$work/$name.err"
  local rc=$?
  check "$name: refused with exit 2 (got $rc)" "[ $rc -eq 2 ]"
  check "$name: one line 'kpm-plot: error: ...' saying why" "[ \$(wc -l < '$work/$name.err') -eq 1 ] && grep -q '^kpm-plot: error: ' '$work/$name.err' && grep -q -- \"$why\" '$work/$name.err'"
  check "$name: no traceback, no file contents, no image" "! grep -q -e Traceback -e SECRET -e \$'\\x1b' '$work/$name.err' && [ ! -s '$work/$name.out' ] && [ ! -e '$work/$name.png' ]"
}
# craft NAME SOURCE PYTHON: copies SOURCE.h5 to NAME.h5 and runs PYTHON with f open on it.
craft() {
  cp "$work/$2.h5" "$work/$1.h5"
  /usr/bin/python3 - "$work/$1.h5" <<PY
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r+")
def replace(name, **kw):
    del f[name]
    f.create_dataset(name, **kw)
$3
f.close()
PY
}
refused missing "cannot read '$work/nothing.h5': No such file or directory" "$work/nothing.h5"
mkdir "$work/dir.h5"
refused directory "it is a directory" "$work/dir.h5"
mkfifo "$work/fifo.h5"
refused fifo "not a regular file" "$work/fifo.h5"
refused dev_zero "not a regular file" /dev/zero
printf 'SECRET \x1b[2J not HDF5' > "$work/text.h5"
refused not_hdf5 "not an HDF5 file" "$work/text.h5"
craft no_kpm dos 'del f["/kpm"]'
refused no_kpm "no group '/kpm'" "$work/no_kpm.h5"
craft no_model dos 'del f["/model"]'
refused no_model "no group '/model'" "$work/no_model.h5"
craft no_dos dos 'del f["/dos"]'
refused no_dos "has no plottable data" "$work/no_dos.h5"
craft no_energy dos 'del f["/dos/energy"]'
refused no_energy "no dataset '/dos/energy'" "$work/no_energy.h5"
craft rho_2d dos 'replace("/dos/rho", data=np.ones((3, 4)))'
refused rho_2d "dataset '/dos/rho' has 2 dimensions, expected 1" "$work/rho_2d.h5"
craft rho_short dos 'replace("/dos/rho", data=np.ones(7))'
refused rho_short "dataset '/dos/rho' has shape \[7\]" "$work/rho_short.h5"
craft rho_text dos 'replace("/dos/rho", data=np.array([b"SECRET"] * len(f["/dos/energy"])))'
refused rho_text "dataset '/dos/rho' is not floating point" "$work/rho_text.h5"
craft rho_huge dos 'replace("/dos/rho", shape=(10**9,), dtype="f8", chunks=(4096,), fillvalue=1.0)'
refused rho_huge "dataset '/dos/rho' has shape \[1000000000\], expected \[" "$work/rho_huge.h5"
craft both_huge dos 'for n in ["/dos/energy", "/dos/rho"]: replace(n, shape=(10**9,), dtype="f8", chunks=(4096,), fillvalue=1.0)'
check "both_huge: the crafted file stays small" "[ \$(stat -c %s '$work/both_huge.h5') -lt 1000000 ]"
refused both_huge "dataset '/dos/energy' claims 1000000000 values" "$work/both_huge.h5"
craft unstored dos 'n = 10**6; replace("/dos/energy", shape=(n,), dtype="f8", chunks=(4096,), fillvalue=0.0); replace("/dos/rho", shape=(n,), dtype="f8", chunks=(4096,), fillvalue=1.0)'
refused unstored "dataset '/dos/energy' of shape \[1000000\] does not store its values" "$work/unstored.h5"
craft rho_nan dos 'd = f["/dos/rho"]; a = d[...]; a[3] = np.nan; d[...] = a'
refused rho_nan "dataset '/dos/rho' holds non-finite values" "$work/rho_nan.h5"
craft energy_inf dos 'd = f["/dos/energy"]; a = d[...]; a[-1] = np.inf; d[...] = a'
refused energy_inf "dataset '/dos/energy' holds non-finite values" "$work/energy_inf.h5"
craft energy_unsorted dos 'd = f["/dos/energy"]; d[...] = d[...][::-1]'
refused energy_unsorted "not an increasing energy grid" "$work/energy_unsorted.h5"
craft m_text dos 'f["/model"].attrs["m"] = "SECRET"'
refused m_text "attribute 'm' of '/model' is not a finite number" "$work/m_text.h5"
craft moments_text dos 'f["/kpm"].attrs["num_moments"] = "SECRET"'
refused moments_text "attribute 'num_moments' of '/kpm' is not a finite integer" "$work/moments_text.h5"
craft name_escape dos 'f["/model"].attrs["name"] = "SECRET\x1b[2J"'
refused name_escape "attribute 'name' of '/model' is not printable text" "$work/name_escape.h5"
craft ldos_rows ldos 'replace("/ldos/rows", data=np.arange(3))'
refused ldos_rows "dataset '/ldos/rho' has shape \[8, " "$work/ldos_rows.h5" --kind ldos
craft map_orbitals map 'f["/ldos_map"].attrs["orbitals_summed"] = np.int64(0)'
refused map_orbitals "'orbitals_summed' of '/ldos_map' is not a positive integer" "$work/map_orbitals.h5" --kind map
craft map_float_orbitals map 'f["/ldos_map"].attrs["orbitals_summed"] = 2.5'
refused map_float_orbitals "'orbitals_summed' of '/ldos_map' is not a finite integer" "$work/map_float_orbitals.h5" --kind map
craft spectral_ticks spectral 'replace("/spectral/ticks", data=np.array([0, 2, 10**6]))'
refused spectral_ticks "dataset '/spectral/ticks' does not match" "$work/spectral_ticks.h5"
craft spectral_bands spectral 'replace("/spectral/bands", data=np.ones((2, 3)))'
refused spectral_bands "dataset '/spectral/bands' has shape \[2, 3\]" "$work/spectral_bands.h5"
craft external_rho dos 'del f["/dos/rho"]; f["/dos/rho"] = h5py.ExternalLink(sys.argv[1].rsplit("/", 1)[0] + "/fifo.h5", "/x")'
refused external_rho "'/dos/rho' is a soft or external link" "$work/external_rho.h5"
"$plot" "$work/dos.h5" --dpi 0 -o "$work/dpi.png" > /dev/null 2> "$work/dpi.err"
check "--dpi out of range: exit 2 naming the option and its range" "[ $? -eq 2 ] && grep -q -- '--dpi 0: allowed range 10 .. 1000' '$work/dpi.err' && [ ! -e '$work/dpi.png' ]"
"$plot" "$work/dos.h5" -o "$work/no/such/dir/x.png" > /dev/null 2> "$work/nodir.err"
check "unwritable output: one line, no traceback" "[ $? -eq 1 ] && [ \$(wc -l < '$work/nodir.err') -eq 1 ] && grep -q \"^kpm-plot: error: cannot write '$work/no/such/dir/x.png'\" '$work/nodir.err'"
# stdout closed before the final line (kpm-plot ... | true): no BrokenPipeError traceback.
"$plot" "$work/dos.h5" -o "$work/pipe.png" 2> "$work/pipe.err" | true
check "closed stdout: no traceback" "! grep -q -e Traceback -e 'Exception ignored' '$work/pipe.err' && [ -s '$work/pipe.png' ]"
# Ctrl-C while it works: one line and exit 130, not a traceback.
/usr/bin/python3 - "$plot" "$work/dos.h5" > /dev/null 2> "$work/int.err" <<'PY'
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("kpm_plot", sys.argv[1])
spec = importlib.util.spec_from_loader("kpm_plot", loader)
kp = importlib.util.module_from_spec(spec)
loader.exec_module(kp)
def interrupted(*a, **k):
    raise KeyboardInterrupt
kp.h5py.File = interrupted
sys.exit(kp.main([sys.argv[2], "-o", "/dev/null"]))
PY
check "Ctrl-C: exit 130 with one line, no traceback" "[ $? -eq 130 ] && [ \"\$(cat '$work/int.err')\" = 'kpm-plot: interrupted' ]"

# The image never replaces an input file, and the message names the file written.
cp "$work/dos.h5" "$work/x.png"; cp "$work/x.png" "$work/x.orig"
"$plot" "$work/x.png" > "$work/own.out" 2>&1
check "input named x.png: the default image is x.png.png, the input intact" "[ $? -eq 0 ] && cmp -s '$work/x.png' '$work/x.orig' && [ -s '$work/x.png.png' ] && grep -qx \"plot written to $work/x.png.png\" '$work/own.out'"
"$plot" "$work/dos.h5" -o "$work/sub/../dos.h5" > "$work/same.out" 2> "$work/same.err"
check "-o naming the input is refused (exit 2), the input intact" "[ $? -eq 2 ] && grep -q \"is the input file '$work/dos.h5'\" '$work/same.err' && /usr/bin/python3 -c 'import h5py,sys; h5py.File(sys.argv[1], \"r\")' '$work/dos.h5'"
"$plot" "$work/dos.h5" -o "$work/bare" > "$work/bare.out" 2>&1
check "-o without extension: the file written is bare.png, and the message says so" "[ $? -eq 0 ] && [ -s '$work/bare.png' ] && [ ! -e '$work/bare' ] && grep -qx \"plot written to $work/bare.png\" '$work/bare.out'"
if [ -n "$eigs" ]; then
  "$eigs" --model ti --lattice 4x4x2 --window 0.6:0.61 --method dense --threads 1 --quiet --output "$work/none.h5" > /dev/null 2>&1
  check "kpm-eigs: a window without eigenvalues is a valid result" "[ $? -eq 0 ] && [ \"\$(/usr/bin/python3 -c 'import h5py,sys; print(h5py.File(sys.argv[1], \"r\")[\"/eigs\"].attrs[\"num_found\"])' '$work/none.h5')\" = 0 ]"
  "$eigs" --model ti --lattice 4x4x2 --window -1:1 --method dense --threads 1 --quiet --output "$work/some.h5" > /dev/null 2>&1
  "$plot" "$work/some.h5" --dos "$work/dos.h5" -o "$work/dos.h5" > /dev/null 2> "$work/dosin.err"
  check "-o naming the --dos input is refused (exit 2)" "[ $? -eq 2 ] && grep -q \"(--dos)\" '$work/dosin.err'"
  "$plot" "$work/none.h5" -o "$work/none.png" > /dev/null 2> "$work/none.err"
  check "no eigenvalue in the window: said so, not called damaged (exit 2)" "[ $? -eq 2 ] && grep -q 'is a valid kpm-eigs result with no eigenvalue in the window \[0.6, 0.61\] t' '$work/none.err' && ! grep -q empty '$work/none.err' && [ ! -e '$work/none.png' ]"
else
  echo "SKIPPED: kpm-eigs cases (no kpm-eigs given)"
fi
exit $fail
