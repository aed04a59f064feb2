#!/usr/bin/env bash
# kpm-dos as a user runs it: --help documents every option; a quick run writes a file
# that an independent reader (h5py) finds complete; bad input exits non-zero with a
# message naming the option and leaves no file.
set -u
exe="$1"; src="$2"
source "$(dirname "$0")/../support/script_lib.sh"

help="$("$exe" --help)"
for opt in model lattice t m dot-potential dot-radius dot-period dot-depth disorder disorder-seed boundary \
           moments vectors vector-seed trace energy-range kernel lorentz-lambda energy-points matrix \
           sell-C sell-sigma threads precision output export-matrix config plan ranks weights; do
  check "--help mentions --$opt" "grep -q -- '--$opt' <<<\"\$help\""
done

"$exe" --config "$src/inputs/test/ti_tiny.ini" --output "$work/tiny.h5" --export-matrix "$work/tiny.mtx" > "$work/out.txt" 2>&1
check "quick run exits 0" "[ $? -eq 0 ]"
check "quick run says where the result went" "grep -q 'result written to $work/tiny.h5' '$work/out.txt'"
check "summary has Gflop/s and GB/s" "grep -q 'Gflop/s' '$work/out.txt' && grep -q 'GB/s' '$work/out.txt'"
check "matrix market header" "head -1 '$work/tiny.mtx' | grep -q '%%MatrixMarket matrix coordinate complex general'"
if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
  check "h5py reads the schema" "/usr/bin/python3 '$src/tests/integration/check_schema.py' '$work/tiny.h5'"
else
  echo "SKIPPED: h5py schema check (/usr/bin/python3 has no h5py)"
fi

# Provenance names the commit the binary was built from (taken at build time, so a rebuild
# after a pull moves it), not the one the build directory was configured at.
if head="$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null)"; then
  check "--version names the checked-out commit $head" "\"\$exe\" --version | grep -q 'git $head'"
else
  echo "SKIPPED: --version revision check ($src is not a git checkout)"
fi

bad() {  # bad NAME MUST_MENTION ARGS...
  local name="$1" mention="$2"; shift 2
  "$exe" --output "${out:-$work/bad.h5}" "$@" > "$work/bad.txt" 2>&1
  local rc=$?
  check "$name: non-zero exit" "[ $rc -ne 0 ]"
  check "$name: message names $mention" "grep -q -- '$mention' '$work/bad.txt'"
  check "$name: no output file" "[ ! -e '$work/bad.h5' ] && [ -z \"\$(ls '$work' | grep tmp)\" ]"
}
# --plan sizes the paper's run without allocating: 1024 ranks fit 64 GiB each, 4 do not.
plan="$("$exe" --config "$src/inputs/ti-dots-1600x1600x40.ini" --plan --ranks 1024 --plan-bandwidth 100 --memory-limit 64 2>&1)"
check "--plan 1024 ranks exits 0" "[ $? -eq 0 ]"
check "--plan shows 400000 rows per rank" "grep -q 'min cpu *400000' <<<\"\$plan\""
out=/dev/null bad "--plan 4 ranks refused" "needs 122.75 GiB per rank" --config "$src/inputs/ti-dots-1600x1600x40.ini" --plan --ranks 4 --plan-bandwidth 100 --memory-limit 64
# --plan prices the operator and block width the run would use. ti 24x24x10 (N = 23040,
# nnz = 290304) on 4 ranks: 5760 rows and 72576 nonzeros each. Sweep bytes by hand
# (seed 004's minimum traffic, 3 x 16 bytes per row and column of the W-column block):
#   sell, R = 32 (W = R):   20 x 72576 + 48 x 5760 x 32 = 10298880 B = 9.822 MiB
#   sell, --block-width 8:  20 x 72576 + 48 x 5760 x 8  =  3663360 B = 3.494 MiB
#   free, R = 8: potential 8 B per site (1440 sites) + 48 x 5760 x 8 = 2223360 B = 2.120 MiB
plan_row() { "$exe" --config "$src/inputs/ti_quick.ini" --plan --ranks 4 --plan-bandwidth 10 --memory-limit 1 "$@" 2>&1 | grep '^0 cpu'; }
check "--plan sell R = 32 sweeps 9.822 MiB" "plan_row --matrix sell --vectors 32 | grep -q ' 9.822\$'"
check "--plan --block-width 8 sweeps 3.494 MiB" "plan_row --matrix sell --vectors 32 --block-width 8 | grep -q ' 3.494\$'"
check "--plan --matrix free sweeps 2.120 MiB" "plan_row --matrix free | grep -q ' 2.120\$'"
bad "impossible lattice" "--lattice" --lattice 0x4x4
bad "dot period" "--dot-period" --lattice 10x10x4 --dot-period 4
bad "missing input" "--config" --config "$work/none.ini"
bad "unknown kernel" "--kernel" --lattice 4x4x4 --kernel foo
out=/nonexistent/bad.h5 bad "unwritable output" "/nonexistent/bad.h5" --lattice 4x4x4
bad "too big" "needs" --config "$src/inputs/ti-dots-1600x1600x40.ini" --memory-limit 32
# --time-limit: HH:MM:SS, MM:SS or seconds, > 0, minutes and seconds below 60.
bad "time limit minutes" "--time-limit .1:70:00.: expected HH:MM:SS" --lattice 4x4x4 --time-limit 1:70:00
bad "time limit zero" "--time-limit .0.: expected" --lattice 4x4x4 --time-limit 0
bad "time limit text" "--time-limit .soon.: expected" --lattice 4x4x4 --time-limit soon
bad "time limit fields" "--time-limit .1:1:1:1.: expected" --lattice 4x4x4 --time-limit 1:1:1:1
bad "unknown precision" "--precision .half.: allowed values are double, single" --lattice 4x4x4 --precision half
bad "single precision on the naive path" "--precision single: implemented for --matrix sell, crs or free" --lattice 4x4x4 --precision single --matrix naive
# Single precision halves the vectors and stores the matrix in 12 instead of 20 bytes per
# entry, but converts from the double matrix: the check counts the peak (both).
# GPU ranks in single precision: the plan moves half the halo bytes of double per sweep
# (8 instead of 16 bytes per value: 512000 halo rows x 32 columns = 125 and 250 MiB).
gpu_plan() { "$exe" --config "$src/inputs/ti-dots-1600x1600x40.ini" --plan --ranks 4 --gpus 2 --plan-bandwidth 10 --memory-limit 1000 "$@" 2>&1 | grep '^2 gpu'; }
check "--plan GPU ranks double: 250 MiB of halo per sweep" "gpu_plan --precision double | grep -q ' 250.0 '"
check "--plan GPU ranks single: 125 MiB of halo per sweep" "gpu_plan --precision single | grep -q ' 125.0 '"
bad "too big in single precision" "needs" --config "$src/inputs/ti-dots-1600x1600x40.ini" --memory-limit 32 --precision single
# --config must name a regular, readable file of at most 16 MiB (issue 11): refused at once
# with exit 2, one line naming --config and the reason; what Boost quotes from a bad file
# (a line or a key) is escaped and cut, so no file's raw bytes reach the terminal.
# config_refused NAME WHY FILE
config_refused() {
  local name="$1" why="$2" file="$3"
  timeout 20 "$exe" --config "$file" --output "$work/cfg.h5" > "$work/cfg.txt" 2>&1
  local rc=$?
  check "--config $name: exit 2 (got $rc)" "[ $rc -eq 2 ]"
  check "--config $name: one line saying why" "[ \$(wc -l < '$work/cfg.txt') -eq 1 ] && grep -q -- \"$why\" '$work/cfg.txt'"
  check "--config $name: only printable ASCII, at most 300 characters" \
    "! LC_ALL=C grep -q '[^ -~]' '$work/cfg.txt' && [ \$(wc -c < '$work/cfg.txt') -le 300 ] && [ ! -e '$work/cfg.h5' ]"
}
mkdir "$work/dir.ini"; mkfifo "$work/fifo.ini"; truncate -s 17M "$work/huge.ini"
config_refused directory "--config '$work/dir.ini': is a directory" "$work/dir.ini"
config_refused fifo "--config '$work/fifo.ini': not a regular file" "$work/fifo.ini"
config_refused /dev/zero "--config '/dev/zero': not a regular file" /dev/zero
config_refused huge "--config '$work/huge.ini': is 17825792 bytes; an input file may have at most 16 MiB" "$work/huge.ini"
config_refused missing "--config '$work/none.ini': cannot open (No such file or directory)" "$work/none.ini"
/usr/bin/python3 -c "import sys; open(sys.argv[1], 'wb').write(bytes(x for x in range(1, 256) if x not in (10, 35)) * 40)" "$work/binary.ini"
config_refused binary "binary.ini' line 1: the text before '=' is not a key" "$work/binary.ini"
printf 'moments = 64\n\033]0;title\007%0200d = 1\n' 7 > "$work/key.ini"
config_refused "escaped key" "key.ini' line 2: the text before '=' is not a key" "$work/key.ini"
"$exe" --lattice 6x6x4 --moments 64 --vectors 2 --precision single --matrix sell --output "$work/single.h5" > "$work/single.txt" 2>&1
check "single precision runs and says so" "[ \$? -eq 0 ] && grep -q 'operator    : sell-8-256-tiled-single' '$work/single.txt'"
"$exe" --lattice 6x6x4 --moments 64 --vectors 2 --precision single --matrix free --output "$work/single_free.h5" > "$work/single_free.txt" 2>&1
check "single precision matrix-free runs and says so" "[ \$? -eq 0 ] && grep -q 'operator    : ti-stencil-cpu-single' '$work/single_free.txt'"
# --matrix auto (the default): the fastest measured kind for the model, stated in the summary.
"$exe" --lattice 6x6x4 --moments 64 --vectors 2 --output "$work/auto_ti.h5" > "$work/auto_ti.txt" 2>&1
check "auto picks free for ti and says why" "[ \$? -eq 0 ] && grep -q 'operator    : ti-stencil-cpu, .*(--matrix auto: free, the fastest measured for ti' '$work/auto_ti.txt'"
"$exe" --model graphene --lattice 6x6 --moments 64 --vectors 3 --output "$work/auto_gr.h5" > "$work/auto_gr.txt" 2>&1
check "auto picks real-valued sell for graphene at a width without the two-sweep stencil and says why" "[ \$? -eq 0 ] && grep -q 'operator    : sell-8-256-tiled-real, .*(--matrix auto: sell with real values' '$work/auto_gr.txt'"
"$exe" --model graphene --lattice 6x6 --moments 64 --vectors 16 --output "$work/auto_gr16.h5" > "$work/auto_gr16.txt" 2>&1
check "auto picks the stencil with two sweeps per pass for graphene at R = 16" "[ \$? -eq 0 ] && grep -q 'operator    : graphene-stencil-cpu-real, .*(--matrix auto: free, two sweeps per pass' '$work/auto_gr16.txt' && grep -q 'moments     : .*two sweeps per pass over memory' '$work/auto_gr16.txt'"
"$exe" --model graphene --lattice 6x6 --moments 64 --vectors 2 --precision single --output "$work/auto_gr2s.h5" > "$work/auto_gr2s.txt" 2>&1
check "auto picks the two-sweep stencil for graphene in single precision at R = 2" "[ \$? -eq 0 ] && grep -q 'operator    : graphene-stencil-cpu-single-real, .*(--matrix auto: free, two sweeps per pass' '$work/auto_gr2s.txt' && grep -q 'moments     : .*two sweeps per pass over memory' '$work/auto_gr2s.txt'"
"$exe" --lattice 6x6x4 --moments 64 --vectors 2 --sell-C 4 --output "$work/auto_c.h5" > "$work/auto_c.txt" 2>&1
check "auto takes sell when --sell-C is given" "[ \$? -eq 0 ] && grep -q 'operator    : sell-4-256' '$work/auto_c.txt'"
# --sell-C auto (the default): C = 16 at R = 1 (both precisions) and 8 at R >= 2 on the CPU; given as `auto` it does not force sell.
"$exe" --lattice 6x6x4 --moments 64 --vectors 1 --matrix sell --output "$work/sell_r1.h5" > "$work/sell_r1.txt" 2>&1
check "sell at R = 1 takes C = 16 by default" "[ \$? -eq 0 ] && grep -q 'operator    : sell-16-256-tiled,' '$work/sell_r1.txt'"
"$exe" --lattice 6x6x4 --moments 64 --vectors 1 --matrix sell --precision single --output "$work/sell_r1s.h5" > "$work/sell_r1s.txt" 2>&1
check "single-precision sell at R = 1 takes C = 16 by default" "[ \$? -eq 0 ] && grep -q 'operator    : sell-16-256-tiled-single,' '$work/sell_r1s.txt'"
"$exe" --lattice 6x6x4 --moments 64 --vectors 2 --matrix sell --sell-C auto --output "$work/sell_r2.h5" > "$work/sell_r2.txt" 2>&1
check "sell at R = 2 takes C = 8 by default" "[ \$? -eq 0 ] && grep -q 'operator    : sell-8-256-tiled,' '$work/sell_r2.txt'"
"$exe" --lattice 6x6x4 --moments 64 --vectors 2 --sell-C auto --output "$work/auto_cauto.h5" > "$work/auto_cauto.txt" 2>&1
check "--sell-C auto given keeps --matrix auto's choice" "[ \$? -eq 0 ] && grep -q 'operator    : ti-stencil-cpu, ' '$work/auto_cauto.txt'"
"$exe" --model graphene --lattice 6x6 --moments 64 --vectors 1 --output "$work/auto_gr1.h5" > "$work/auto_gr1.txt" 2>&1
check "auto picks the real-coupling stencil for graphene at R = 1" "[ \$? -eq 0 ] && grep -q 'operator    : graphene-stencil-cpu-real, .*(--matrix auto: free' '$work/auto_gr1.txt'"
exit $fail
