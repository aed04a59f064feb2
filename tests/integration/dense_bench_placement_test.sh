#!/usr/bin/env bash
# dense-bench --placement (issue 36, docs/dense.md "Placement by a cost model"): with the
# host-memory device the default places the updates by the measured rates and reports the
# device's share of the update flops; owner is the column owner map; anything else is
# refused with exit 2 naming the option. The owner map's share is known exactly; the
# model's depends on the rates measured in the run (under load the host may take all).
# The factor's backward error stays within the Cholesky bound:
#   ||A - L L^H||_F <= 4 gamma_{n+1} trace(A) <= 4 (n+1) u sqrt(n) ||A||_F
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
share = d["device_update_flop_share"]
if p == "owner":
    # square 40-tiles, 6 tile columns, --slices 2: the device owns the odd columns; per step
    # k: TRSM (4 b^3) of tiles (i > k, k), HERK (4 b^3) of (j, j) and GEMM (8 b^3) of (i > j, j)
    t, dev, alll = n // 40, 0.0, 0.0
    for k in range(t):
        for i in range(k + 1, t):
            alll += 4; dev += 4 * (k % 2)
        for j in range(k + 1, t):
            alll += 4 + 8 * (t - 1 - j); dev += (4 + 8 * (t - 1 - j)) * (j % 2)
    assert abs(share - dev / alll) < 1e-9, (share, dev / alll)
else:  # the measured rates decide (under load the host may take everything)
    assert 0 <= share <= 1, share
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
