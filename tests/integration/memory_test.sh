#!/usr/bin/env bash
# memory_test.sh KPM_DOS KPM_EIGS: the memory promises of docs/reliability.md ("Memory").
#  - a run that does not fit is refused before it allocates (exit 3), the refusal naming the
#    limit that applied (--memory-limit, this machine, or ulimit -v): also when what does not
#    fit is the spectra of --energy-points, a ChebFD window's Rayleigh-Ritz matrices, or the
#    sparse LU of --green / shift-invert;
#  - an allocation that fails anyway is a memory refusal too (exit 3) naming the size, never
#    "internal error" (a preloaded allocator that refuses large blocks stands in for it);
#  - under ulimit -v the programs never hang: too tight to start is refused at once;
#  - --plan of a 1.6e14-row lattice answers at once and allocates nothing proportional to it;
#  - the printed estimate is within 2x of the measured peak for every kind of run.
set -u
dos="$1"; eigs="$2"
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=2
# run LOG PROGRAM ARGS...: exit code in rc; killed after 120 s (a hang is rc 124).
run() { local log="$1"; shift; timeout 120 "$@" > "$log" 2>&1; rc=$?; }
one_line() { [ "$(grep -c . "$1")" -eq 1 ]; }
small=(--model graphene --moments 32 --vectors 2)
tiny=("${small[@]}" --lattice 8x8)

# ---- the limit that applied is named -------------------------------------------------------
run "$work/l1" "$dos" "${small[@]}" --lattice 400x400 --memory-limit 0.001 --output "$work/l1.h5"
check "--memory-limit refusal: exit 3, names --memory-limit, not this machine" \
  "[ $rc -eq 3 ] && grep -q 'the limit --memory-limit is 1.0 MiB' '$work/l1' && ! grep -q 'this machine' '$work/l1' && one_line '$work/l1'"
run "$work/l2" "$eigs" --model ti --lattice 8x8x4 --extremal lowest:4 --method lanczos --memory-limit 0.0001 --output "$work/l2.h5"
check "kpm-eigs --memory-limit refusal names it" "[ $rc -eq 3 ] && grep -q 'the limit --memory-limit is' '$work/l2'"

# ---- what the estimate used to miss ---------------------------------------------------------
# 2^23 energies: the spectra (8 bytes each, several held while written) are ~0.5 GiB.
run "$work/e1" "$dos" "${tiny[@]}" --energy-points 8388608 --memory-limit 0.25 --output "$work/e1.h5"
check "--energy-points 2^23 beyond --memory-limit 0.25: refused, naming the spectra" \
  "[ $rc -eq 3 ] && grep -q 'spectra' '$work/e1' && [ ! -e '$work/e1.h5' ]"
# A ChebFD window of ~1000 pairs on 1024 rows: the columns are 34 MiB, the Rayleigh-Ritz
# matrices and rotation chunks 130 MiB more.
run "$work/c1" "$eigs" --model ti --lattice 8x8x4 --window -6:6 --method chebfd --memory-limit 0.1 --output "$work/c1.h5"
check "chebfd window of ~1000 pairs beyond --memory-limit 0.1: refused before allocating" \
  "[ $rc -eq 3 ] && grep -q 'ChebFD search space' '$work/c1' && grep -q -- '--memory-limit' '$work/c1'"

# The sparse LU analysis (~90 bytes per nonzero: 300 MiB for ti 64x64x16) used to run before
# the check: the limit must hold while it is refused (peak below the limit and the baseline).
for prog in dos eigs; do
  if [ $prog = dos ]; then cmd=("$dos" --model ti --lattice 64x64x16 --ldos 0 --green 0.1)
  else cmd=("$eigs" --model ti --lattice 64x64x16 --shift 0.1 --count 4 --method shift-invert); fi
  /usr/bin/time -f %M -o "$work/peak" timeout 120 "${cmd[@]}" --memory-limit 0.1 --output "$work/g.h5" > "$work/g1" 2>&1; rc=$?
  peak=$(tail -1 "$work/peak")
  check "$prog sparse LU of ti 64x64x16 beyond --memory-limit 0.1: refused (exit 3) with a peak of ${peak} KiB < 100 MiB + 60 MiB of process" \
    "[ $rc -eq 3 ] && grep -q 'sparse LU analysis' '$work/g1' && [ ${peak:-999999999} -lt 163840 ]"
done

# ---- an allocation that fails anyway --------------------------------------------------------
# A preloaded allocator refusing blocks of 64 MiB and more: 2^24 energies need 128 MiB arrays.
if command -v cc > /dev/null; then
  cat > "$work/refuse.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
static const size_t big = (size_t)64 << 20;
void* malloc(size_t n)
{
    static void* (*real)(size_t);
    if (!real) real = (void* (*)(size_t))dlsym(RTLD_NEXT, "malloc");
    if (n >= big) { errno = ENOMEM; return NULL; }
    return real(n);
}
void* aligned_alloc(size_t a, size_t n)
{
    static void* (*real)(size_t, size_t);
    if (!real) real = (void* (*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    if (n >= big) { errno = ENOMEM; return NULL; }
    return real(a, n);
}
EOF
  if cc -shared -fPIC -O1 -o "$work/refuse.so" "$work/refuse.c" -ldl 2> "$work/cc.log"; then
    LD_PRELOAD="$work/refuse.so" run "$work/a1" "$dos" "${tiny[@]}" --quiet --energy-points 16777216 --output "$work/a1.h5"
    check "a failed allocation is a memory refusal: exit 3, one line naming the size" \
      "[ $rc -eq 3 ] && grep -q 'out of memory: allocating 128.0 MiB failed' '$work/a1' && ! grep -q 'internal error' '$work/a1' && one_line '$work/a1'"
  else
    echo "SKIPPED: the failing-allocator check (cc cannot build a shared object: $(head -1 "$work/cc.log"))"
  fi
else
  echo "SKIPPED: the failing-allocator check (no C compiler)"
fi

# ---- ulimit -v -----------------------------------------------------------------------------
# 200 MiB of address space: less than OpenBLAS maps as it starts (128 MiB per thread), which
# used to spin forever on the failing mmap. Refused at once.
( ulimit -v 204800; exec timeout 60 "$dos" "${tiny[@]}" --output "$work/u1.h5" ) > "$work/u1" 2>&1; rc=$?
check "ulimit -v 200 MiB: refused at start (exit 3, no hang), naming ulimit -v" \
  "[ $rc -eq 3 ] && grep -q 'ulimit -v' '$work/u1' && one_line '$work/u1'"
( ulimit -v 204800; exec timeout 60 "$eigs" --model ti --lattice 4x4x2 --extremal lowest:2 --output "$work/u2.h5" ) > "$work/u2" 2>&1; rc=$?
check "... kpm-eigs too" "[ $rc -eq 3 ] && grep -q 'ulimit -v' '$work/u2'"
# Enough to start, not for the run: the run's check names the address-space limit.
( ulimit -v 3145728; exec timeout 60 "$dos" --model graphene --moments 32 --lattice 2000x2000 --vectors 16 --output "$work/u3.h5" ) > "$work/u3" 2>&1; rc=$?
check "ulimit -v 3 GiB, a 4 GiB run: refused by the estimate (exit 3), naming ulimit -v" \
  "[ $rc -eq 3 ] && grep -q 'address-space limit (ulimit -v)' '$work/u3' && one_line '$work/u3'"
# Enough for the run: it runs.
( ulimit -v 3145728; exec timeout 60 "$dos" "${tiny[@]}" --output "$work/u4.h5" ) > "$work/u4" 2>&1; rc=$?
check "ulimit -v 3 GiB, a small run: exit 0" "[ $rc -eq 0 ] && [ -s '$work/u4.h5' ]"

# ---- --plan of huge lattices -----------------------------------------------------------------
plan=(--plan --plan-bandwidth 100 --ranks 1024 --memory-limit 100000)
peak_kib() { /usr/bin/time -f %M -o "$work/peak" "$@" > "$work/plan.log" 2>&1; rc=$?; cat "$work/peak" | tail -1; }
p_small="$(peak_kib "$dos" --model ti --lattice 64x64x4 "${plan[@]}")"
start=$(date +%s.%N)
p_huge="$(timeout 30 /usr/bin/time -f %M -o "$work/peak" "$dos" --model ti --lattice 100000x100000x4000 "${plan[@]}" > "$work/plan.log" 2>&1; echo $?; tail -1 "$work/peak")"
seconds=$(echo "$(date +%s.%N) - $start" | bc)
check "--plan of ti 100000x100000x4000 (1.6e14 rows) on 1024 ranks: answers (took ${seconds} s, limit 5 s on a loaded machine)" \
  "[ \"\$(echo '$p_huge' | head -1)\" = 0 ] && grep -q 'N = 160000000000000 rows' '$work/plan.log' && [ \"\$(echo '$seconds < 5' | bc)\" = 1 ]"
p_huge_rc="$(echo "$p_huge" | head -1)"; p_huge_kib="$(echo "$p_huge" | tail -1)"
check "... its peak memory (${p_huge_kib} KiB) is that of a 64x64x4 plan (${p_small} KiB) within 16 MiB" \
  "[ '$p_huge_rc' = 0 ] && [ \$(( $p_huge_kib - $p_small )) -lt 16384 ]"
start=$(date +%s.%N)
run "$work/p2" "$dos" --model graphene --lattice 1000000000x2 --plan --plan-bandwidth 100 --ranks 64 --memory-limit 100000
seconds=$(echo "$(date +%s.%N) - $start" | bc)
check "--plan of a 1e9 x 2 graphene strip (the longest lattice): answers (took ${seconds} s)" "[ $rc -eq 0 ] && [ \"\$(echo '$seconds < 5' | bc)\" = 1 ]"

# ---- the estimate against the measured peak ----------------------------------------------------
# The peak (ru_maxrss of the process, /usr/bin/time %M) less the process's own baseline: the
# peak of the same program on a tiny input (code, libraries, OpenBLAS's and OpenMP's start-up,
# HDF5), which no input changes and the estimate does not count. The sizes make every run's
# estimate 100-400 MiB, several times the baseline (~40-60 MiB), so the baseline's own noise
# (a few MiB) cannot decide the verdict; each must land within a factor 2 of the estimate.
to_kib() {  # "12.3 MiB" -> KiB (0 when the run printed no estimate)
  awk -v v="${1:-0}" -v u="${2:-B}" 'BEGIN { f = (u == "KiB") ? 1 : (u == "MiB") ? 1024 : (u == "GiB") ? 1048576 : 1.0 / 1024; printf "%.0f", v * f }'
}
measure() {  # measure NAME PROGRAM ARGS...: peak and printed estimate, KiB
  local name="$1"; shift
  /usr/bin/time -f %M -o "$work/peak" "$@" > "$work/m.log" 2>&1; rc=$?
  peak=$(tail -1 "$work/peak")
  local line; line="$(grep -m1 'memory      : ' "$work/m.log")"
  est=$(to_kib $(echo "$line" | sed -E 's/.*memory      : ([0-9.]+) ([KMG]i?B) estimated.*/\1 \2/'))
}
base_dos=0; base_eigs=0
measure base "$dos" "${tiny[@]}" --output "$work/b.h5"; base_dos=$peak
measure base "$eigs" --model ti --lattice 4x4x2 --extremal lowest:2 --method lanczos --output "$work/be.h5"; base_eigs=$peak
echo "baseline peak: kpm-dos ${base_dos} KiB, kpm-eigs ${base_eigs} KiB"
within2() {  # within2 NAME BASE PROGRAM ARGS...
  local name="$1" base="$2"; shift 2
  measure "$name" "$@"
  local used=$(( peak - base ))
  check "$name: estimate ${est} KiB vs peak ${peak} - baseline ${base} = ${used} KiB, within 2x" \
    "[ $rc -eq 0 ] && [ ${est:-0} -gt 0 ] && [ $used -gt 0 ] && [ \$(( 2 * $used )) -ge ${est:-0} ] && [ \$(( 2 * ${est:-0} )) -ge $used ]"
}
within2 "dos (graphene 700x700, R 8)" "$base_dos" "$dos" --model graphene --lattice 700x700 --moments 32 --vectors 8 --output "$work/m1.h5"
within2 "dos with 2^22 energies" "$base_dos" "$dos" "${tiny[@]}" --energy-points 4194304 --output "$work/m2.h5"
within2 "ldos (ti 40x40x16, 64 rows)" "$base_dos" "$dos" --model ti --lattice 40x40x16 --moments 64 --ldos 0-63 --energy-points 65536 --output "$work/m3.h5"
within2 "spectral k-path (graphene 60x60)" "$base_dos" "$dos" --model graphene --lattice 60x60 --moments 64 --k-path G-K-M-G --energy-points 65536 --output "$work/m4.h5"
within2 "green (ti 12x12x8, 4 rows, 16 energies)" "$base_dos" "$dos" --model ti --lattice 12x12x8 --ldos 0-3 --green 0.1 --moments 16 --energy-points 16 --output "$work/m5.h5"
# kpm-eigs: sizes that converge in seconds; their estimates (10-20 MiB) are still several
# times the baseline's run-to-run spread (~3 MiB).
within2 "eigs lanczos (ti 16x16x8, 8 pairs)" "$base_eigs" "$eigs" --model ti --lattice 16x16x8 --extremal highest:8 --method lanczos --output "$work/m6.h5"
within2 "eigs chebfd window (ti 16x16x8)" "$base_eigs" "$eigs" --model ti --lattice 16x16x8 --window -0.3:0.3 --method chebfd --output "$work/m7.h5"
within2 "eigs chebfd wide window (ti 6x6x4, the Rayleigh-Ritz matrices dominate)" "$base_eigs" "$eigs" --model ti --lattice 6x6x4 --window -6:6 --method chebfd --output "$work/m9.h5"
within2 "eigs shift-invert (ti 8x8x8)" "$base_eigs" "$eigs" --model ti --lattice 8x8x8 --shift 0.1 --count 4 --method shift-invert --output "$work/m8.h5"

exit $fail
