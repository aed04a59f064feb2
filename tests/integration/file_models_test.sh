#!/usr/bin/env bash
# Models from files (models.md §8, issue 32) as a user runs them:
#  - inputs/graphene_hr.dat (with disorder) and inputs/ti_hr.dat (a slab) under --model hr give
#    the built-in models' seeded moments, with --matrix sell and free;
#  - a disordered ti slab exported with --export-matrix and read back with --model
#    matrix-market gives the same moments;
#  - a complex file with second neighbours gives the same moments with --matrix free as with
#    sell, also on supercells of 1 and 2 cells where periodic images coincide, and under
#    mpirun (2 ranks; skipped visibly without mpirun);
#  - kpm-plot draws both kinds of result (its title names the lattice or the matrix size);
#  - /model records name, file, size, SHA-256, num_orbitals, Nx/Ny/Nz, boundary; a checkpoint
#    records the SHA-256, so a restart with an edited file is refused;
#  - each malformed file is refused with exit 2 and one line naming the file and the line,
#    never its text; what a file model lacks (a lattice, positions) is refused by name.
# Tolerance 1e-10: the same matrix and the same random vectors, summed in another order by
# another operator over M = 64 moments of a scaled H (|mu_n| <= 1): rounding, ~1e-14.
set -u
exe="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; src="$2"; mpiexec="${3:-}"; plot="${4:-}"
source "$(dirname "$0")/../support/script_lib.sh"
if ! "$py" -c 'import h5py, numpy' 2>/dev/null; then
  echo "SKIPPED: every check here reads result files with h5py (/usr/bin/python3 has no h5py)"
  exit 0
fi

run() {  # [R=WIDTH] run OUT ARGS...: a quiet seeded run (R = 3 vectors); fails the check on a non-zero exit
  local out="$1"; shift
  "$exe" -q --moments 64 --vectors "${R:-3}" --vector-seed 5 --threads 2 --output "$work/$out" "$@" > "$work/$out.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || { echo "  exit $rc:"; cat "$work/$out.log"; }
  return $rc
}
same_moments() {  # same_moments A.h5 B.h5
  "$py" - "$work/$1" "$work/$2" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(f, "r") for f in sys.argv[1:3])
ma, mb = a["/kpm/moments"][...], b["/kpm/moments"][...]
for k in ("scale_a", "scale_b", "num_rows"):
    assert a["/kpm"].attrs[k] == b["/kpm"].attrs[k], (k, a["/kpm"].attrs[k], b["/kpm"].attrs[k])
d = np.max(np.abs(ma - mb))
print("  max |mu_n difference| = %.3g" % d)
assert ma.shape == mb.shape and d < 1e-10
PY
}

# graphene 12x12 with disorder: built-in vs the _hr.dat, sell and free (R = 3 and R = 1).
g="--lattice 12x12 --disorder 1.5 --disorder-seed 7 --energy-range -4.5:4.5"
check "graphene built-in runs" "run g_ref.h5 --model graphene $g --matrix sell"
for m in sell free; do
  check "graphene as hr, --matrix $m, runs" "run g_$m.h5 --model hr --model-file '$src/inputs/graphene_hr.dat' $g --matrix $m"
  check "graphene as hr, --matrix $m: the built-in's moments" "same_moments g_ref.h5 g_$m.h5"
done
check "graphene as hr, --matrix free, R = 1, runs" "R=1 run g_free1.h5 --model hr --model-file '$src/inputs/graphene_hr.dat' $g --matrix free"
check "graphene built-in, R = 1" "R=1 run g_ref1.h5 --model graphene $g --matrix sell"
check "graphene as hr, --matrix free, R = 1: the built-in's moments" "same_moments g_ref1.h5 g_free1.h5"
# --matrix auto takes the stencil for a _hr.dat that offers one, as for the built-in (R = 1)
check "graphene as hr, --matrix auto, R = 1, runs" "R=1 run g_auto1.h5 --model hr --model-file '$src/inputs/graphene_hr.dat' $g"
check "graphene as hr, --matrix auto, R = 1: the stencil" "\"$py\" -c \"import h5py,sys; n=h5py.File(sys.argv[1],'r')['provenance'].attrs['operator']; n=n.decode() if isinstance(n,bytes) else n; print('  operator', n); sys.exit(0 if 'stencil' in n else 1)\" '$work/g_auto1.h5'"

# A ti slab 6x6x4 (periodic x, y, open z), clean (the built-in's disorder is per site).
t="--lattice 6x6x4 --energy-range -5.5:5.5"
check "ti built-in runs" "run t_ref.h5 --model ti $t --matrix sell"
for m in sell free; do
  check "ti as hr, --matrix $m, runs" "run t_$m.h5 --model hr --model-file '$src/inputs/ti_hr.dat' $t --boundary ppo --matrix $m"
  check "ti as hr, --matrix $m: the built-in's moments" "same_moments t_ref.h5 t_$m.h5"
done

# A complex 3-orbital file with hoppings up to two cells away (Hermitian by construction).
"$py" "$(dirname "$0")/write_far_hr.py" "$work/long_hr.dat"
for lat in "7x5x4 --boundary ppo --disorder 1" "2x1x3" "1x2x2"; do
  for m in sell free; do
    check "long-range hr $lat, --matrix $m, runs" "run l_$m.h5 --model hr --model-file '$work/long_hr.dat' --lattice $lat --matrix $m --energy-range -14:14"
  done
  check "long-range hr $lat: free gives sell's moments" "same_moments l_sell.h5 l_free.h5"
done
if [ -n "$mpiexec" ] && command -v "$mpiexec" > /dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  check "long-range hr reference (1 rank)" "run l_one.h5 --model hr --model-file '$work/long_hr.dat' --lattice 7x5x4 --boundary ppo --matrix sell --energy-range -14:14"
  for m in sell free; do
    "$mpiexec" -np 2 --bind-to none "$exe" -q --moments 64 --vectors 3 --vector-seed 5 --threads 1 --output "$work/l_mpi_$m.h5" \
      --model hr --model-file "$work/long_hr.dat" --lattice 7x5x4 --boundary ppo --matrix $m --energy-range -14:14 > "$work/mpi.log" 2>&1
    check "long-range hr on 2 ranks, --matrix $m: the 1-rank moments" "same_moments l_one.h5 l_mpi_$m.h5"
  done
else
  echo "SKIPPED: 2-rank runs of model hr (no mpiexec given or found)"
fi

# A disordered ti slab through Matrix Market and back.
check "ti slab with disorder exported" "run x_ref.h5 --model ti --lattice 4x4x3 --disorder 2 --disorder-seed 3 --energy-range -6:6 --matrix sell --export-matrix '$work/ti.mtx'"
check "matrix-market reads the export" "run x_mm.h5 --model matrix-market --model-file '$work/ti.mtx' --energy-range -6:6"
check "matrix-market: the exported model's moments" "same_moments x_ref.h5 x_mm.h5"
if [ -n "$mpiexec" ] && command -v "$mpiexec" > /dev/null; then
  "$mpiexec" -np 2 --bind-to none "$exe" -q --moments 64 --vectors 3 --vector-seed 5 --threads 1 --output "$work/x_mpi.h5" \
    --model matrix-market --model-file "$work/ti.mtx" --energy-range -6:6 > "$work/mpi.log" 2>&1
  check "matrix-market on 2 ranks: the exported model's moments" "same_moments x_ref.h5 x_mpi.h5"
fi
check "matrix-market with Lanczos bounds and the default output name" \
  "(cd '$work' && '$exe' -q --moments 32 --vectors 2 --model matrix-market --model-file ti.mtx > mm_default.log 2>&1) && [ -f '$work/matrix-market_ti.h5' ]"

# A checkpoint records the model file's SHA-256: a restart with an edited file is refused,
# one with the same file resumes.
cp "$src/inputs/ti_hr.dat" "$work/my_hr.dat"
ck=(-q --model hr --model-file "$work/my_hr.dat" --lattice 24x24x16 --boundary ppo --moments 16384 --vectors 4
    --energy-range -6:6 --threads 2 --output "$work/ck.h5")
"$exe" "${ck[@]}" --time-limit 1 > "$work/ck.log" 2>&1
check "hr run stopped by --time-limit with a checkpoint (exit 75)" "[ $? -eq 75 ] && [ -f '$work/ck.h5.checkpoint.h5' ]"
sed -i '5s/2.000000/2.500000/' "$work/my_hr.dat"
"$exe" "${ck[@]}" --restart "$work/ck.h5.checkpoint.h5" > "$work/ck.log" 2>&1
check "restart with an edited model file: exit 2 naming its SHA-256" "[ $? -eq 2 ] && grep -q -- '--model-file-sha256: checkpoint' '$work/ck.log'"
cp "$src/inputs/ti_hr.dat" "$work/my_hr.dat"
"$exe" "${ck[@]}" --restart "$work/ck.h5.checkpoint.h5" > "$work/ck.log" 2>&1
check "restart with the same model file resumes" "[ $? -eq 0 ] && [ -f '$work/ck.h5' ]"

# /model of file models.
check "/model of hr and matrix-market" "'$py' - '$work' '$src' <<'PY'
import sys, os, hashlib, h5py
work, src = sys.argv[1:3]
for out, name, path, extra in (('g_sell.h5', 'hr', src + '/inputs/graphene_hr.dat', dict(num_orbitals=2, Nx=12, Ny=12, Nz=1, boundary='ppp')),
                               ('t_free.h5', 'hr', src + '/inputs/ti_hr.dat', dict(num_orbitals=4, Nx=6, Ny=6, Nz=4, boundary='ppo')),
                               ('x_mm.h5', 'matrix-market', work + '/ti.mtx', dict(num_orbitals=192))):
    a = h5py.File(os.path.join(work, out), 'r')['/model'].attrs
    s = lambda v: v.decode() if isinstance(v, bytes) else str(v)
    assert s(a['name']) == name, (out, a['name'])
    assert s(a['file']) == path, (out, a['file'])
    assert int(a['file_size']) == os.path.getsize(path), out
    assert s(a['file_sha256']) == hashlib.sha256(open(path, 'rb').read()).hexdigest(), out
    for k, v in extra.items():
        assert (s(a[k]) if isinstance(v, str) else int(a[k])) == v, (out, k, a[k], v)
PY"

check "--help documents --model-file and the file models" \
  "'$exe' --help | grep -q -- '--model-file' && '$exe' --help | grep -q 'matrix-market'"
if [ -n "$plot" ] && "$py" -c 'import matplotlib' 2>/dev/null; then
  check "kpm-plot draws an hr result" "'$plot' '$work/t_sell.h5' -o '$work/t.png' > /dev/null 2>&1 && [ -s '$work/t.png' ]"
  check "kpm-plot draws a matrix-market result" "'$plot' '$work/x_mm.h5' -o '$work/x.png' > /dev/null 2>&1 && [ -s '$work/x.png' ]"
else
  echo "SKIPPED: kpm-plot of file-model results (no kpm-plot given, or no matplotlib)"
fi

# Malformed files: exit 2, one line on stderr naming --model-file, the path and the line,
# never the line's text (the sentinel SECRET9 sits in the bad field).
refused() {  # refused NAME LINE TEXT [MODEL]
  local name="$1" line="$2" text="$3" model="${4:-hr}" args
  printf '%b' "$text" > "$work/bad.dat"
  if [ "$model" = hr ]; then args="--lattice 2x2"; else args=""; fi
  "$exe" -q --moments 8 --vectors 1 --output "$work/bad.h5" --model "$model" --model-file "$work/bad.dat" $args > "$work/bad.out" 2> "$work/bad.err"
  local rc=$?
  check "$name: exit 2" "[ $rc -eq 2 ]"
  check "$name: one line naming --model-file $work/bad.dat line $line" \
    "[ \$(wc -l < '$work/bad.err') -eq 1 ] && grep -q -- '--model-file $work/bad.dat line $line:' '$work/bad.err'"
  check "$name: the line is not quoted" "! grep -q SECRET9 '$work/bad.err'"
  check "$name: no result file" "[ ! -e '$work/bad.h5' ]"
}
ok2="0 0 0 1 1 0.5 0\n0 0 0 2 1 1 0\n0 0 0 1 2 1 0\n0 0 0 2 2 0.5 0\n"
# (long numbers: a file too short for the 4 entry lines its header announces is refused at the header)
refused "hr truncated" 6 "c\n2\n1\n1\n0 0 0 1 1 0.500000000000000000000 0.000000000000000000000\n0 0 0 2 1 1.000000000000000000000 0.000000000000000000000\n"
refused "hr wrong nrpts (one R too many)" 9 "c\n2\n1\n1\n${ok2}1 0 0 1 1 0 0 SECRET9\n"
refused "hr header claims 10^12 entries" 3 "c\n1000\n1000000000000\n1\n"
refused "hr NaN" 5 "c\n2\n1\n1\n0 0 0 1 1 nan SECRET9\n${ok2}"
refused "hr inf" 5 "c\n2\n1\n1\n0 0 0 1 1 inf 0\n${ok2}"
refused "hr orbital out of range" 5 "c\n2\n1\n1\n0 0 0 3 1 SECRET9 0\n${ok2}"
refused "hr duplicate (R, m, n)" 6 "c\n2\n1\n1\n0 0 0 1 1 0.5 0\n0 0 0 1 1 0.5 0\n0 0 0 1 2 1 0\n0 0 0 2 2 0.5 0\n"
refused "hr not Hermitian" 7 "c\n2\n1\n1\n0 0 0 1 1 0.5 0\n0 0 0 2 1 1 0\n0 0 0 1 2 1 0.5\n0 0 0 2 2 0.5 0\n"
refused "hr bad weights line" 4 "c\n2\n1\nSECRET9\n${ok2}"
refused "mtx not Hermitian" 4 "%%MatrixMarket matrix coordinate complex general\n2 2 2\n1 1 1 0\n2 1 1 0\n" matrix-market
refused "mtx index out of range" 3 "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 SECRET9\n" matrix-market
refused "mtx truncated" 3 "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n" matrix-market

# What a file model lacks is refused with one message naming it (exit 2, no file).
lacks() {  # lacks NAME MENTION ARGS...
  local name="$1" mention="$2"; shift 2
  "$exe" -q --moments 8 --vectors 1 --output "$work/lack.h5" "$@" > /dev/null 2> "$work/lack.err"
  local rc=$?
  check "$name: exit 2 naming $mention" "[ $rc -eq 2 ] && grep -q -- '$mention' '$work/lack.err' && [ \$(wc -l < '$work/lack.err') -eq 1 ]"
  check "$name: no result file" "[ ! -e '$work/lack.h5' ]"
}
hr="--model hr --model-file $src/inputs/graphene_hr.dat --lattice 6x6"
mm="--model matrix-market --model-file $work/ti.mtx"
lacks "hr without a file" "--model hr needs --model-file" --model hr --lattice 4x4
lacks "--model-file on a built-in" "--model-file: model ti is built in" --model ti --lattice 3x3x3 --model-file "$work/ti.mtx"
lacks "hr missing file" "--model-file $work/none_hr.dat: cannot open" --model hr --model-file "$work/none_hr.dat" --lattice 2x2
lacks "hr dots without positions" "--dot-period 2: dots on model hr need orbital positions" $hr --dot-period 2
lacks "hr k-path without cell vectors" "--k-path: model hr needs its cell vectors (--cell-vectors)" $hr --k-path G-M
lacks "hr --t" "--t: model hr takes its energies from --model-file" $hr --t 2
lacks "mm --matrix free" "--matrix free: model matrix-market has no lattice" $mm --matrix free
lacks "mm --lattice" "--lattice: model matrix-market has no lattice" $mm --lattice 4x4x3
lacks "mm layer LDOS" "model matrix-market has no lattice" $mm --ldos layer:0
lacks "mm k-points" "--k-points/--k-path: model matrix-market has no lattice" $mm --k-points 0,0
lacks "mm 2-D decomposition" "--decomposition 2d: model matrix-market has no lattice to tile" $mm --decomposition 2d --plan --ranks 2

exit $fail
