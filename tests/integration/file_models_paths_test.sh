#!/usr/bin/env bash
# file_models_paths_test.sh KPM_DOS KPM_EIGS SRC [MPIEXEC [KPM_PLOT]]: issue 32, the models read from a
# file (models.md §8) take the built-in models' paths:
#  - kpm-eigs (lanczos, chebfd extremal and window, shift-invert, dense; and lanczos on 2
#    ranks) on graphene written as _hr.dat (with disorder), the ti slab as _hr.dat and a
#    disordered ti slab exported to Matrix Market gives the built-in model's eigenvalues to
#    1e-10; a file model has no per-layer or per-sublattice weights, and kpm-plot draws its
#    levels alone;
#  - kpm-dos --plan on hr prints the built-in model's plan, row for row (rows, nnz, halo,
#    memory, time per moment, sweep bytes), in 1-D and 2-D; on matrix-market a plan whose
#    halo is the matrix's bandwidth; the planned rows per rank are the run's under mpirun;
#  - mpirun -np 2 and -np 3 with 2-D decompositions (2d, 1xP, 2x1) of hr models, also one
#    whose hoppings reach two cells and leave the z layer: the 1-rank moments to 1e-12;
#    what has no halo model is refused by name (matrix-market; a 9-orbital _hr.dat, whose
#    `auto` runs 1-D);
#  - --ldos site:X,Y on a 2-D hr model: the built-in graphene's site:X,Y moments.
# Tolerances: eigenpairs are found to --tolerance 1e-12 (relative to max |E| <= 6 t), so each
# eigenvalue is within its residual, < 6e-12, of the exact one and two runs within 1.2e-11
# < 1e-10. Moments: the same matrix and vectors summed in another order, |mu_n| <= 1 over
# M = 64 moments: rounding, ~1e-15 (the 2-D runs' 1e-12 leaves a factor 1000).
set -u
dos="$1"; eigs="$2"; src="$3"; mpiexec="${4:-}"; plot="${5:-}"
source "$(dirname "$0")/../support/script_lib.sh"
if ! "$py" -c 'import h5py, numpy' 2>/dev/null; then
  echo "FAIL: every check here reads result files with h5py (/usr/bin/python3 has no h5py; the setup script installs it)"
  exit 1
fi
export OMP_NUM_THREADS=1
graphene_hr="$src/inputs/graphene_hr.dat"; ti_hr="$src/inputs/ti_hr.dat"

quiet() {  # quiet LOG CMD...: runs CMD, its output to $work/LOG; prints it and fails on a non-zero exit
  local log="$1"; shift
  "$@" > "$work/$log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || { echo "  exit $rc:"; cat "$work/$log"; }
  return $rc
}
same_values() {  # same_values A.h5 B.h5: /eigs/values equal to 1e-10, both non-empty
  "$py" - "$work/$1" "$work/$2" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(f, "r")["/eigs/values"][...] for f in sys.argv[1:3])
d = np.max(np.abs(a - b)) if a.shape == b.shape and a.size else float("inf")
print("  %d eigenvalues, max difference %.3g" % (a.size, d))
assert a.size > 0 and d < 1e-10
PY
}
same_moments() {  # same_moments A.h5 B.h5 TOL: /kpm/moments (or /ldos/moments) equal to TOL
  "$py" - "$work/$1" "$work/$2" "$3" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(f, "r") for f in sys.argv[1:3])
key = "/ldos/moments" if "/ldos/moments" in a else "/kpm/moments"
ma, mb = a[key][...], b[key][...]
d = np.max(np.abs(ma - mb)) if ma.shape == mb.shape else float("inf")
print("  %s: max difference %.3g" % (key, d))
assert d < float(sys.argv[3])
PY
}

# --- kpm-eigs -----------------------------------------------------------------------------
quiet export.log "$dos" -q --model ti --lattice 4x4x3 --disorder 2 --disorder-seed 3 --moments 8 --vectors 1 \
  --energy-range -6:6 --matrix sell --export-matrix "$work/ti.mtx" -o "$work/export.h5"
check "a disordered ti slab exported to Matrix Market" "[ -s '$work/ti.mtx' ]"
g_builtin="--model graphene --lattice 8x6 --disorder 1.5 --disorder-seed 7"
g_file="--model hr --model-file $graphene_hr --lattice 8x6 --disorder 1.5 --disorder-seed 7"
x_builtin="--model ti --lattice 4x4x3 --disorder 2 --disorder-seed 3"
x_file="--model matrix-market --model-file $work/ti.mtx"
t_builtin="--model ti --lattice 4x4x3"
t_file="--model hr --model-file $ti_hr --lattice 4x4x3 --boundary ppo"
k=0
for request in "--extremal lowest:6 --method lanczos" "--extremal highest:4 --method chebfd" \
               "--window -0.6:0.6 --method chebfd" "--shift 0.1 --count 4 --method shift-invert" \
               "--shift 0.1 --count 4 --method dense"; do
  for pair in "graphene as hr|$g_builtin|$g_file" "ti slab as matrix-market|$x_builtin|$x_file" \
              "ti slab as hr|$t_builtin|$t_file"; do
    IFS='|' read -r name builtin file <<< "$pair"
    k=$((k + 1))
    quiet "e$k.log" "$eigs" -q $builtin $request --tolerance 1e-12 --threads 1 -o "$work/e${k}_ref.h5"
    if quiet "e${k}f.log" "$eigs" -q $file $request --tolerance 1e-12 --threads 1 -o "$work/e$k.h5"; then
      check "kpm-eigs $request, $name: the built-in's eigenvalues" "same_values e${k}_ref.h5 e$k.h5"
    else
      check "kpm-eigs $request, $name runs" false
    fi
  done
done
check "a file model's eigs result holds no layer or sublattice weights, its /model names it" "'$py' - '$work/e1.h5' '$work/e2.h5' <<'PY'
import sys, h5py
for f, name in zip(sys.argv[1:3], ('hr', 'matrix-market')):
    h = h5py.File(f, 'r')
    assert 'layer_weight' not in h['/eigs'] and 'sublattice_weight' not in h['/eigs'], f
    n = h['/model'].attrs['name']
    assert (n.decode() if isinstance(n, bytes) else n) == name, (f, n)
PY"
if [ -n "$plot" ] && "$py" -c 'import matplotlib' 2>/dev/null; then
  check "kpm-plot draws the levels of a file model's eigs result, no weight series" \
    "'$plot' '$work/e1.h5' -o '$work/e1.png' --describe 2>&1 | '$py' -c 'import json, sys; f = json.load(sys.stdin)[\"facts\"]; sys.exit(not (f[\"eigenvalues\"] >= 6 and f[\"series\"] == []))' && [ -s '$work/e1.png' ]"
else
  echo "SKIPPED: kpm-plot of a file model's eigs result (no kpm-plot given, or no matplotlib)"
fi

# --- --ldos site: on a 2-D hr model --------------------------------------------------------
quiet l_ref.log "$dos" -q --model graphene --lattice 8x6 --ldos site:3,4 --moments 64 --energy-range -3.5:3.5 -o "$work/l_ref.h5"
for site in "site:3,4" "site:3,4,0"; do
  if quiet l.log "$dos" -q --model hr --model-file "$graphene_hr" --lattice 8x6 --ldos "$site" --moments 64 \
       --energy-range -3.5:3.5 -o "$work/l.h5"; then
    check "--ldos $site on graphene as hr (8x6): the built-in's site:3,4 moments" "same_moments l_ref.h5 l.h5 1e-10"
  else
    check "--ldos $site on graphene as hr (8x6) runs" false
  fi
done
"$dos" -q --model hr --model-file "$graphene_hr" --lattice 8x6 --ldos site:3 --moments 8 -o "$work/l1.h5" > /dev/null 2> "$work/l1.err"
check "--ldos site:3 on an 8x6 hr model: exit 2 naming the forms it takes" \
  "[ $? -eq 2 ] && grep -q -- \"--ldos 'site:3': expected site:X,Y or site:X,Y,Z\" '$work/l1.err'"

# --- kpm-dos --plan ------------------------------------------------------------------------
plan() {  # plan ARGS: the whole plan output (a given bandwidth and limit: nothing measured)
  "$dos" --plan --plan-bandwidth 10 --memory-limit 1 --vectors 2 "$@" 2>&1
}
# (Not ti with --matrix free: a _hr.dat's stencil holds a potential per row, the built-in
# ti's one per site; the pricing of each against its run is checked below.)
for layout in "--ranks 3 --decomposition 1d --matrix sell" "--ranks 3 --decomposition 1d --matrix free" \
              "--ranks 4 --decomposition 2x2 --matrix sell" "--ranks 3 --decomposition 2d --matrix sell"; do
  ref=$(plan --model graphene --lattice 12x9 $layout); got=$(plan --model hr --model-file "$graphene_hr" --lattice 12x9 $layout)
  check "--plan $layout, graphene as hr: the built-in's plan" "[ -n \"\$got\" ] && grep -q '^plan fits' <<<\"\$got\" && [ \"\$got\" = \"\$ref\" ]"
  [[ "$layout" == *free* ]] && continue
  ref=$(plan --model ti --lattice 8x6x4 $layout); got=$(plan --model hr --model-file "$ti_hr" --lattice 8x6x4 --boundary ppo $layout)
  check "--plan $layout, ti as hr: the built-in's plan" "[ -n \"\$got\" ] && grep -q '^plan fits' <<<\"\$got\" && [ \"\$got\" = \"\$ref\" ]"
done
# The plan prices the operator as the run's memory check does: on one rank the plan holds
# the matrix and 2 vectors of N x W x 16 bytes, the run reports its matrix apart.
for args in "--model hr --model-file $ti_hr --lattice 8x6x4 --boundary ppo --matrix free" \
            "--model hr --model-file $ti_hr --lattice 8x6x4 --boundary ppo --matrix sell" \
            "--model matrix-market --model-file $work/ti.mtx --matrix sell"; do
  needs=$(plan $args --ranks 1 | sed -n 's/^plan fits: largest rank needs \([0-9.]*\) KiB.*/\1/p')
  n=$(plan $args --ranks 1 | sed -n 's/^plan: N = \([0-9]*\) rows.*/\1/p')
  if quiet price.log "$dos" --vectors 2 --moments 16 --threads 1 $args -o "$work/price.h5"; then
    matrix=$(sed -n 's/^memory .*(matrix \([0-9.]*\) KiB.*/\1/p' "$work/price.log")
    check "--plan ${args%% --model-file*} --matrix ${args##*--matrix }: matrix ${matrix} KiB as the run prices it (plan $needs KiB for N = $n, W = 2)" \
      "[ -n '$matrix' ] && [ -n '$needs' ] && awk 'BEGIN { d = $needs - 2 * 16 * $n * 2 / 1024 - $matrix; exit !(d < 0.06 && d > -0.06) }'"
  else
    check "the run of $args" false
  fi
done
# matrix-market, 192 rows on 3 ranks of 64: the ti slab's periodic x couples row 0 to row
# 4 x 4 x 3 x 4 - 48 = 144 (x = 3 to x = 0), so the bandwidth is >= 128 and rank 0's halo
# reaches the last row: 128 rows (the other two ranks' rows).
mm_plan=$(plan --model matrix-market --model-file "$work/ti.mtx" --ranks 3)
check "--plan on matrix-market: 3 ranks of 64 rows, rank 0's halo the other 128 rows" \
  "awk '\$2 == \"cpu\" { printf \"%s:%s \", \$3, \$5 }' <<<\"\$mm_plan\" | grep -qx '64:128 64:128 64:128 ' && grep -q '^plan fits' <<<\"\$mm_plan\""
"$dos" --plan --plan-bandwidth 10 --memory-limit 1 --model matrix-market --model-file "$work/ti.mtx" --ranks 4 \
  --decomposition 2x2 > /dev/null 2> "$work/mm2d.err"
check "--plan --decomposition 2x2 on matrix-market: exit 2, no lattice to tile" \
  "[ $? -eq 2 ] && grep -q -- '--decomposition 2x2: model matrix-market has no lattice to tile' '$work/mm2d.err'"

# A _hr.dat of 9 orbitals (more than a block stencil takes): no halo model.
"$py" - "$work/nine_hr.dat" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("nine orbitals, a chain in x\n9\n3\n1 1 1\n")
    for r in (0, 1, -1):
        for n in range(1, 10):
            for m in range(1, 10):
                v = (0.1 * m if m == n else 0.0) if r == 0 else (-1.0 if m == n else 0.0)
                f.write("%d 0 0 %d %d %.1f 0.0\n" % (r, m, n, v))
PY
"$dos" --plan --plan-bandwidth 10 --memory-limit 1 --model hr --model-file "$work/nine_hr.dat" --lattice 6x4 --ranks 2 \
  --decomposition 2d > /dev/null 2> "$work/nine.err"
check "--decomposition 2d on a 9-orbital hr model: exit 2 naming its 9 orbitals" \
  "[ $? -eq 2 ] && grep -q -- '--decomposition 2d: model hr has no halo model for (x, y) tiles: 9 orbitals per cell' '$work/nine.err'"
nine=$(plan --model hr --model-file "$work/nine_hr.dat" --lattice 6x4 --ranks 2)
check "--plan on a 9-orbital hr model takes 1-D x-slabs with --decomposition auto" \
  "grep -q '^plan fits' <<<\"\$nine\" && ! grep -q '2-D decomposition' <<<\"\$nine\""

# --- under mpirun ----------------------------------------------------------------------------
if [ -z "$mpiexec" ] || ! command -v "$mpiexec" > /dev/null; then
  echo "SKIPPED: the runs under mpirun (no MPIEXEC given or found)"
  exit $fail
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() {  # mpi NP LOG CMD...
  local np="$1" log="$2"; shift 2
  quiet "$log" timeout 300 "$mpiexec" -np "$np" --bind-to none "$@"
}
attribute() {  # attribute FILE NAME: a /provenance attribute as text
  "$py" -c 'import h5py,sys; v=h5py.File(sys.argv[1],"r")["provenance"].attrs[sys.argv[2]]; print(v.decode() if isinstance(v, bytes) else v)' "$1" "$2"
}
planned_rows() { awk '$2 == "cpu" { printf "%s%s", sep, $3; sep = ":" }'; }

# A 3-orbital complex file whose hoppings reach two cells in x and y and leave the z layer.
"$py" "$(dirname "$0")/write_far_hr.py" "$work/far_hr.dat"
kpm=(--moments 64 --vectors 3 --vector-seed 5 --threads 1 -q)
g2d="--model hr --model-file $graphene_hr --lattice 12x9 --disorder 1.5 --energy-range -4.5:4.5"
f2d="--model hr --model-file $work/far_hr.dat --lattice 7x6x3 --boundary ppo --disorder 1 --energy-range -14:14"
for model in "$g2d" "$f2d"; do
  quiet one.log "$dos" "${kpm[@]}" $model --matrix sell -o "$work/one.h5" || continue
  for case in "2 2d sell" "2 1x2 free" "3 2d sell" "3 1x3 sell" "3 1x3 free"; do
    read -r np dec matrix <<< "$case"
    rm -f "$work/m.h5"
    if mpi "$np" m.log "$dos" "${kpm[@]}" $model --matrix "$matrix" --decomposition "$dec" -o "$work/m.h5"; then
      layout=$(attribute "$work/m.h5" decomposition)
      check "${model%% --energy*} on $np ranks, --decomposition $dec ($layout), --matrix $matrix: the 1-rank moments" \
        "same_moments one.h5 m.h5 1e-12 && [[ '$layout' == '2d '* ]]"
      planned=$(plan $model --matrix "$matrix" --decomposition "$dec" --ranks "$np" | planned_rows)
      ran=$(attribute "$work/m.h5" rows_per_rank)
      check "  --plan's rows per rank are the run's ($planned vs $ran)" "[ -n '$planned' ] && [ '$planned' = '$ran' ]"
    else
      check "${model%% --energy*} on $np ranks, --decomposition $dec, --matrix $matrix runs" false
    fi
  done
done
# matrix-market on 3 ranks (1-D): --plan's rows are the run's.
if mpi 3 mm.log "$dos" "${kpm[@]}" $x_file --energy-range -6:6 -o "$work/mm3.h5"; then
  planned=$(plan $x_file --ranks 3 | planned_rows); ran=$(attribute "$work/mm3.h5" rows_per_rank)
  check "matrix-market on 3 ranks: --plan's rows per rank are the run's ($planned vs $ran)" "[ '$planned' = '$ran' ]"
else
  check "matrix-market on 3 ranks runs" false
fi
# What has no halo model: matrix-market's 2d is refused on every rank with one message;
# a 9-orbital _hr.dat under `auto` runs 1-D.
timeout 300 "$mpiexec" -np 2 --bind-to none "$dos" "${kpm[@]}" $x_file --decomposition 2d -o "$work/mm2d.h5" > "$work/mm2d.out" 2> "$work/mm2d.err"
check "matrix-market on 2 ranks with --decomposition 2d: exit 2, one error line naming the missing lattice, no result" \
  "[ $? -eq 2 ] && [ \$(grep -c -i error '$work/mm2d.err') -eq 1 ] && ! grep -q MPI_ABORT '$work/mm2d.err' && grep -q -- '--decomposition 2d: model matrix-market has no lattice to tile' '$work/mm2d.err' && [ ! -e '$work/mm2d.h5' ]"
if mpi 2 nine.log "$dos" "${kpm[@]}" --model hr --model-file "$work/nine_hr.dat" --lattice 6x4 --energy-range -3:3 -o "$work/nine.h5"; then
  check "a 9-orbital hr model on 2 ranks, --decomposition auto: 1-D" "[ \"\$(attribute '$work/nine.h5' decomposition)\" = 1d ]"
else
  check "a 9-orbital hr model on 2 ranks runs" false
fi
# kpm-eigs on 2 ranks (1-D) on a file model: the built-in's serial eigenvalues.
if mpi 2 e_mpi.log "$eigs" -q $g_file --extremal lowest:6 --method lanczos --tolerance 1e-12 --threads 1 -o "$work/e_mpi.h5"; then
  check "kpm-eigs lanczos on 2 ranks, graphene as hr: the built-in's eigenvalues" "same_values e1_ref.h5 e_mpi.h5"
else
  check "kpm-eigs lanczos on 2 ranks, graphene as hr, runs" false
fi
exit $fail
