#!/bin/bash
# messages_test.sh KPM_DOS KPM_EIGS SOURCE_DIR: the messages of one-process runs
# (docs/reliability.md "Messages"):
#   - a --config file with a bad line (no `=`, a section, a text before `=` that is no key,
#     an unknown key, a key given twice, a bad switch value) is refused with exit 2 in one
#     line that names the file, the line number and the key, and never quotes the line: a
#     secret on that line does not appear;
#   - kpm-eigs refuses every kpm-dos-only option (--ldos, --green, --k-path, --moments,
#     --checkpoint, --plan ...) with exit 2 in one line naming it, on its command line and
#     as a --config key (with the line), and its --help lists them; the options both
#     programs use (--vector-seed, --lanczos-steps, --kernel ...) still run;
#   - a bad value of a known key in a --config file (not a number, not an allowed choice, a
#     malformed lattice or range, a number out of range) is refused with exit 2 in one line
#     that names the file, the line and the key, the reason and the allowed range, and never
#     the value; the same value typed on the command line is quoted;
#   - so are bad values checked after the options are read (--boundary by the model,
#     --ldos, --k-points, --k-path, --weights with --plan), whose messages name the bad
#     piece of the value by its position (item 2, point 2), not by its text;
#   - more --threads than the PUs of the process: one PERFWARNING, and the run goes on.
set -u
dos=$1 eigs=$2 src=$3
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=1
failed=0
secret="hunter2-S3CRET"
hidden=$secret  # the text that refused() requires to be absent ("" = none)

# refused LABEL PROGRAM "TEXT1|TEXT2" ARGS...: exit 2, one line on stderr containing every
# TEXT, not the secret, no result file.
refused() {
  local label=$1 program=$2 texts=$3
  shift 3
  "$program" "$@" -o "$work/out.h5" > "$work/stdout" 2> "$work/stderr"
  local rc=$? ok=1 text
  [ "$rc" -eq 2 ] || ok=0
  [ "$(wc -l < "$work/stderr")" -eq 1 ] || ok=0
  [ -z "$hidden" ] || ! grep -q -F "$hidden" "$work/stderr" "$work/stdout" || ok=0
  [ ! -e "$work/out.h5" ] || ok=0
  IFS='|' read -r -a wanted <<< "$texts"
  for text in "${wanted[@]}"; do grep -q -F -- "$text" "$work/stderr" || ok=0; done
  if [ "$ok" -eq 1 ]; then
    echo "ok: $label: $(cat "$work/stderr")"
  else
    echo "FAIL: $label: exit $rc (expected 2); stderr (expected one line with '$texts', without the secret):"
    cat "$work/stderr"
    failed=1
  fi
}

# A valid input file with one bad line 4 (lines 1-3 and 5 are fine).
config() {  # config NAME BAD_LINE: writes $work/NAME.ini
  printf '# a test input\nmodel = ti\nlattice = 4x4x3\n%s\nmoments = 16\n' "$2" > "$work/$1.ini"
}
config noeq "moments 16 $secret"
refused "--config line without '='" "$dos" "--config '$work/noeq.ini' line 4|not \`key = value\`" -c "$work/noeq.ini" -q
config section "[$secret]"
refused "--config section line" "$dos" "line 4|sections" -c "$work/section.ini" -q
config nokey "$secret words = 1"
refused "--config text before '=' that is no key" "$dos" "line 4|not a key" -c "$work/nokey.ini" -q
config unknown "password = $secret"
refused "--config unknown key" "$dos" "line 4|unknown key 'password'" -c "$work/unknown.ini" -q
config twice "moments = 32 # $secret"
refused "--config key given twice" "$dos" "line 5|key 'moments' again (first on line 4)" -c "$work/twice.ini" -q
config switch "quiet = $secret"
refused "--config bad switch value" "$dos" "line 4|key 'quiet'" -c "$work/switch.ini"
config switch_eigs "save-vectors = $secret"
refused "kpm-eigs --config bad switch value" "$eigs" "line 4|key 'save-vectors'" -c "$work/switch_eigs.ini" \
  --extremal lowest:2

# Bad values of known keys in a --config file: line 3 holds the value (model on line 2, the
# lattice on the command line unless the file gives it).
valued() {  # valued NAME LINE: writes $work/NAME.ini
  printf '# values\nmodel = ti\n%s\n' "$2" > "$work/$1.ini"
}
lattice=(--lattice 4x4x3)
valued moments "moments = $secret"
refused "--config integer value" "$dos" "--config '$work/moments.ini' line 3, key 'moments': not a decimal integer" \
  -c "$work/moments.ini" "${lattice[@]}" -q
valued epsilon "epsilon = 0.0$secret"
refused "--config real value" "$dos" "line 3, key 'epsilon': not a finite decimal number" -c "$work/epsilon.ini" "${lattice[@]}" -q
valued lattice "lattice = 4x${secret}x3"
refused "--config lattice extent" "$dos" "line 3, key 'lattice': not a decimal integer" -c "$work/lattice.ini" -q
valued lattice_shape "lattice = 4x$secret"
refused "--config lattice shape" "$dos" "line 3, key 'lattice': model 'ti' needs NxxNyxNz" -c "$work/lattice_shape.ini" -q
valued lattice_quote "lattice = 4': $secret"
refused "--config lattice holding a quote" "$dos" "line 3, key 'lattice': model 'ti'" -c "$work/lattice_quote.ini" -q
valued matrix "matrix = $secret"
refused "--config choice" "$dos" "line 3, key 'matrix': allowed values are auto, sell" -c "$work/matrix.ini" "${lattice[@]}" -q
valued range "energy-range = -8:$secret"
refused "--config range" "$dos" "line 3, key 'energy-range': not a finite decimal number" -c "$work/range.ini" "${lattice[@]}" -q
valued range_order "energy-range = 8:-$secret"
refused "--config range bound" "$dos" "line 3, key 'energy-range': not a finite" -c "$work/range_order.ini" "${lattice[@]}" -q
valued kernel "kernel = $secret"
refused "--config choice checked by the reconstruction" "$dos" "line 3, key 'kernel': is not a damping kernel; allowed: jackson" \
  -c "$work/kernel.ini" "${lattice[@]}" -q
valued window "window = $secret"
refused "kpm-eigs --config range" "$eigs" "line 3, key 'window': expected Emin:Emax" -c "$work/window.ini" "${lattice[@]}" -q
hidden=987654321  # numbers out of range: the number is the file's content too
valued big "moments = $hidden"
refused "--config integer out of range" "$dos" "line 3, key 'moments': allowed range is 2 .. 16777216" \
  -c "$work/big.ini" "${lattice[@]}" -q
valued extent "lattice = 4x4x$hidden$hidden"
refused "--config lattice extent out of range" "$dos" "line 3, key 'lattice': each extent must be 1 .. 10^9" -c "$work/extent.ini" -q
valued tolerance "tolerance = 1$hidden"
refused "kpm-eigs --config real out of range" "$eigs" "line 3, key 'tolerance': allowed range is 0 < tolerance < 1" \
  -c "$work/tolerance.ini" "${lattice[@]}" --extremal lowest:2 -q
valued sellc "sell-C = $hidden"
refused "--config sell-C out of range" "$dos" "line 3, key 'sell-C': allowed range is 1 .. 1024" -c "$work/sellc.ini" "${lattice[@]}" -q
# Values checked after the options are read (the model's boundary, the --ldos rows, the
# momenta, the --plan weights): the same treatment, and their pieces are named by position.
valued boundary "boundary = p$secret"
refused "--config boundary (a model check)" "$dos" "line 3, key 'boundary': model ti needs 3 letters" \
  -c "$work/boundary.ini" "${lattice[@]}" -q
valued ldos "ldos = 1,$secret"
refused "--config ldos item" "$dos" "line 3, key 'ldos': item 2|is not a decimal integer" -c "$work/ldos.ini" "${lattice[@]}" -q
valued ldos_site "ldos = site:1,$secret,0"
refused "--config ldos site" "$dos" "line 3, key 'ldos': coordinate 2 is not a decimal integer" \
  -c "$work/ldos_site.ini" "${lattice[@]}" -q
valued k_path "k-path = G-$secret"
refused "--config k-path point" "$dos" "line 3, key 'k-path': point 2 is unknown; ti knows G, X, Y, M" \
  -c "$work/k_path.ini" "${lattice[@]}" -q
valued k_points "k-points = 0,0;1,$secret"
refused "--config k-points item" "$dos" "line 3, key 'k-points': item 2 (my) is not a decimal integer" \
  -c "$work/k_points.ini" "${lattice[@]}" -q
valued weights "weights = 1:$secret"
refused "--config weights (--plan)" "$dos" "line 3, key 'weights': weight number 2 is not a number" \
  -c "$work/weights.ini" "${lattice[@]}" --plan --ranks 2 -q
hidden=987654321
valued ldos_row "ldos = 0,$hidden"
refused "--config ldos row out of range" "$dos" "line 3, key 'ldos': item 2 (a row) is outside 0 .. 191" \
  -c "$work/ldos_row.ini" "${lattice[@]}" -q
hidden=$secret
# The same values typed on the command line are quoted (the user typed them); a key the
# command line overrides is not named.
hidden=""
refused "--moments on the command line" "$dos" "--moments '$secret': not a decimal integer" "${lattice[@]}" --moments "$secret" -q
refused "--matrix on the command line" "$dos" "--matrix '$secret'" "${lattice[@]}" --matrix "$secret" -q
refused "--energy-range on the command line" "$dos" "--energy-range '$secret'" "${lattice[@]}" --energy-range "-8:$secret" -q
refused "--lattice on the command line" "$dos" "--lattice '$secret'" --lattice "4x${secret}x3" -q
refused "--boundary on the command line" "$dos" "--boundary 'p$secret'" "${lattice[@]}" --boundary "p$secret" -q
refused "--ldos on the command line" "$dos" "--ldos '1,$secret': item 2" "${lattice[@]}" --ldos "1,$secret" -q
refused "--k-path on the command line" "$dos" "--k-path 'G-$secret': point 2" "${lattice[@]}" --k-path "G-$secret" -q
refused "--weights on the command line" "$dos" "--weights '1:$secret': weight number 2" "${lattice[@]}" \
  --weights "1:$secret" --plan --ranks 2 -q
refused "--moments out of range on the command line" "$dos" "--moments 987654321: allowed range" "${lattice[@]}" --moments 987654321 -q
hidden=$secret
refused "--moments on the command line over the --config value" "$dos" "--moments 1: allowed range is 2" \
  -c "$work/moments.ini" "${lattice[@]}" --moments 1 -q

# kpm-eigs and the kpm-dos-only options.
eigs_args=(--model ti --lattice 4x4x3 --extremal lowest:2 -q)
refused "kpm-eigs --ldos" "$eigs" "--ldos:|kpm-dos option" "${eigs_args[@]}" --ldos 0
refused "kpm-eigs --green" "$eigs" "--green:|kpm-dos option" "${eigs_args[@]}" --green 0.1
refused "kpm-eigs --k-path" "$eigs" "--k-path:|kpm-dos option" "${eigs_args[@]}" --k-path M-G-X
for option in "--k-points 0,0" "--ldos-map-energy 0" "--moments 64" "--vectors 2" "--trace exact" "--bounds gershgorin" \
              "--energy-range -8:8" "--energy-grid -3:3:11" "--realizations 2" "--checkpoint $work/c.h5" \
              "--time-limit 60" "--export-matrix $work/m.mtx" "--plan" "--ranks 4"; do
  # shellcheck disable=SC2086  # option and value are two words
  refused "kpm-eigs $option" "$eigs" "${option%% *}:|kpm-dos option" "${eigs_args[@]}" $option
done
printf 'model = ti\nlattice = 4x4x3\nextremal = lowest:2\nmoments = 64\n' > "$work/dos_keys.ini"
refused "kpm-eigs --config with a kpm-dos key" "$eigs" "line 4: key 'moments'|kpm-dos option" -c "$work/dos_keys.ini" -q
help=$("$eigs" --help)
for option in ldos green k-path k-points moments plan restart; do
  grep -q -- "--$option[,.]" <<< "$help" || { echo "FAIL: kpm-eigs --help does not list --$option as refused"; failed=1; }
done
"$eigs" "${eigs_args[@]}" --vector-seed 3 --lanczos-steps 50 --kernel lorentz --epsilon 0.02 --weights "" \
  --method chebfd -o "$work/both.h5" > "$work/log" 2>&1 ||
  { cat "$work/log"; echo "FAIL: kpm-eigs with options both programs use"; failed=1; }
echo "ok: kpm-eigs runs with --vector-seed, --lanczos-steps, --kernel, --epsilon, --weights"

# More threads than the PUs this process may use (nproc: its affinity mask): one PERFWARNING
# naming both counts, and the run still ends with its result; as many threads as PUs: none.
pus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc alone honours OMP_NUM_THREADS
for program in dos eigs; do
  if [ $program = dos ]; then run=("$dos" --model ti --lattice 4x4x3 --moments 16 -q); else run=("$eigs" "${eigs_args[@]}"); fi
  "${run[@]}" --threads $((pus + 1)) -o "$work/crowded_$program.h5" > "$work/stdout" 2> "$work/stderr"
  rc=$?
  if [ $rc -eq 0 ] && [ -s "$work/crowded_$program.h5" ] && [ "$(wc -l < "$work/stderr")" -eq 1 ] &&
     grep -q "PERFWARNING: $((pus + 1)) OpenMP threads on the $pus PU.* of this process's CPU set" "$work/stderr"; then
    echo "ok: kpm-$program --threads $((pus + 1)) on $pus PUs: $(cat "$work/stderr")"
  else
    echo "FAIL: kpm-$program --threads $((pus + 1)) on $pus PUs: exit $rc, stderr:"; cat "$work/stderr"; failed=1
  fi
  "${run[@]}" --threads "$pus" -o "$work/fits_$program.h5" > "$work/stdout" 2> "$work/stderr"
  if [ $? -eq 0 ] && [ ! -s "$work/stderr" ]; then echo "ok: kpm-$program --threads $pus: no warning"
  else echo "FAIL: kpm-$program --threads $pus on $pus PUs: stderr not empty:"; cat "$work/stderr"; failed=1; fi
done

[ "$failed" -eq 0 ] && echo PASS
exit "$failed"
