#!/usr/bin/env bash
# dense-bench --placement (issue 36, docs/dense.md "Placement by a cost model"): with the
# host-memory device the default places the updates by the measured rates and reports the
# device's share of the update flops; owner is the column owner map; anything else is
# refused with exit 2 naming the option. The factor's backward error stays within the
# Cholesky bound: ||A - L L^H||_F <= 4 gamma_{n+1} trace(A) <= 4 (n+1) u sqrt(n) ||A||_F
# (HPD: trace <= sqrt(n) ||A||_F), i.e. the bench's residual / (n u ||A||_F) <= 4 (n+1) sqrt(n) / n.
set -u
BENCH=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
N=240
for p in model owner; do
  "$BENCH" --op potrf --n $N --tile 40 --threads 1 --device-workers 1 --reps 1 --no-pin --placement $p \
    --json "$TMP/$p.json" > "$TMP/$p.log" 2>&1
  rc=$?
  [ $rc = 0 ] || { cat "$TMP/$p.log"; fail "--placement $p exited $rc"; }
  grep -q "placement $p (model: host" "$TMP/$p.log" || { cat "$TMP/$p.log"; fail "no placement line for $p"; }
  /usr/bin/python3 - "$TMP/$p.json" $p $N <<'PY' || fail "JSON of --placement $p"
import json, math, sys
d = json.load(open(sys.argv[1]))
p, n = sys.argv[2], int(sys.argv[3])
assert d["placement"] == p, d["placement"]
assert 0 < d["device_update_flop_share"] < 1, d["device_update_flop_share"]
assert d["link_gbytes_per_second"] > 0, d["link_gbytes_per_second"]
assert 0 <= d["residual"] <= 4 * (n + 1) * math.sqrt(n) / n, d["residual"]
# the bound counts the host's rate: with --slices 2 both sides own columns either way
assert d["bound_gflops"] > d["device_kernel_gflops"] > 0, d
PY
done
"$BENCH" --op potrf --n $N --placement fastest > "$TMP/bad.log" 2>&1
rc=$?
[ $rc = 2 ] || fail "--placement fastest exited $rc, want 2"
grep -q -- "--placement must be model or owner" "$TMP/bad.log" || fail "message: $(head -1 "$TMP/bad.log")"
echo "dense-bench placement: ok"
