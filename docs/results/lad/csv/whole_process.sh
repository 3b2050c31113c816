#!/usr/bin/env bash
# Whole process from a CSV file, as a user runs it: `aidopt solve lad` (read + AID + certificate)
# against R (data.table::fread + quantreg rq.fit.pfn, and rq.fit.fnb), each in its own process,
# wall time and peak RSS by GNU time; R's fit time is also taken inside R (system.time).
#   bash docs/results/lad/csv/whole_process.sh [N] [M] [REPEATS] [DIR]
# Writes DIR/whole_process.csv (one row per run) and prints it.
set -euo pipefail
n=${1:-1000000}; m=${2:-20}; repeats=${3:-3}; dir=${4:-/tmp/aidopt-csv}
mkdir -p "$dir"
csv="$dir/lad_${n}x${m}.csv"
[ -f "$csv" ] || aidopt generate lad --n "$n" --m "$m" --seed 0 --out "$csv"
cat > "$dir/fit.R" <<'R'
args <- commandArgs(TRUE)
suppressPackageStartupMessages({library(data.table); library(quantreg)})
d <- fread(args[1]); y <- d$y; X <- cbind(1, as.matrix(d[, !"y"]))
fit <- switch(args[2], fnb = rq.fit.fnb, pfn = rq.fit.pfn)
t <- system.time(f <- fit(X, y, tau = 0.5))
cat(sprintf("%.10g %.3f\n", sum(abs(y - X %*% f$coefficients)), t[["elapsed"]]))
R
out="$dir/whole_process.csv"
echo "method,n,m,repeat,wall_s,peak_rss_mb,fit_s,objective,status" > "$out"
for r in $(seq 1 "$repeats"); do
  /usr/bin/time -f "%e %M" -o "$dir/time.txt" \
    aidopt solve lad --data "$csv" --target y --tol 1e-6 --quiet --json > "$dir/aid.json"
  read -r wall rss < "$dir/time.txt"
  fields=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['seconds'], repr(d['objective']), d['status'])" "$dir/aid.json")
  read -r fit obj status <<< "$fields"
  echo "aidopt-aid-fn,$n,$m,$r,$wall,$((rss / 1024)),$fit,$obj,$status" >> "$out"
  for method in pfn fnb; do
    /usr/bin/time -f "%e %M" -o "$dir/time.txt" Rscript "$dir/fit.R" "$csv" "$method" > "$dir/r.txt"
    read -r wall rss < "$dir/time.txt"
    read -r obj fit < "$dir/r.txt"
    echo "R-fread-rq.fit.$method,$n,$m,$r,$wall,$((rss / 1024)),$fit,$obj,optimal" >> "$out"
  done
done
cat "$out"
