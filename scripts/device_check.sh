#!/usr/bin/env bash
# One call on the GPU machine: build offline, run the GPU tests, check `gpuext map --backend cuda`
# against stock minimap2 2.31 byte for byte, benchmark the kernel on recorded jobs and the whole
# mapping against stock on all cores; print a short table last. Results also go to $OUT.
# Needs .carry/ (mappy-2.31.tar.gz, ecoli_ont.fastq.gz): ../shared/tools/device-carry.sh, then copy
# the E. coli ONT reads from data/cache (scripts/fetch_data.py get ecoli-ont).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 GPUEXT_MAPPY_SDIST=.carry/mappy-2.31.tar.gz GPUEXT_NO_DOWNLOAD=1
OUT=${OUT:-/tmp/gpuext-device}; mkdir -p "$OUT"; T=$(mktemp -d)
NT=$(nproc); REF=data/ecoli/e_coli_k12.fa.gz; ONT=.carry/ecoli_ont.fastq.gz
table=()
python3 -m pip install -q --no-build-isolation --no-deps -e . >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
ORACLE=$(python3 scripts/upstream.py oracle minimap2) || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 scripts/simulate_reads.py --profile ont -n 1500 --seed 7 -o "$T/sim_ont.fq.gz" "$REF"
python3 scripts/simulate_reads.py --profile hifi -n 800 --seed 7 -o "$T/sim_hifi.fq.gz" "$REF"

echo "== kernel tests"
timeout 200 python3 -m pytest -q -m gpu tests/kernel 2>&1 | tee "$OUT/kernel_tests.log" | tail -4
table+=("kernel tests: $(tail -1 "$OUT/kernel_tests.log")")

echo "== exactness, --backend cuda"
for row in "map-ont:$ONT" "map-ont:$T/sim_ont.fq.gz" "map-hifi:$T/sim_hifi.fq.gz" "map-pb:data/lambda/lambda_subreads.fq.gz"; do
  preset=${row%%:*}; reads=${row#*:}; ref=$REF; [ "$preset" = map-pb ] && ref=data/lambda/lambda_ref.fa.gz
  r=$(timeout 120 python3 scripts/exactness.py --backend cuda --gpuext-opt=--stats=$OUT/stats_$preset_$(basename $reads).json -- -ax "$preset" --MD --cs -t "$NT" "$ref" "$reads" 2>&1 | tail -3)
  echo "$preset $(basename "$reads"): $r"; table+=("exact $preset $(basename "$reads"): $(echo "$r" | head -1)")
done

echo "== kernel benchmark on recorded jobs"
gpuext map --backend cpu --dump-jobs "$T/ont_jobs.npz" -x map-ont -t "$NT" "$REF" "$T/sim_ont.fq.gz" >/dev/null 2>&1
b=$(timeout 180 python3 scripts/bench_ksw_extd2.py --jobs "$T/ont_jobs.npz" 2>&1 | tee "$OUT/bench_sim_ont.log" | tail -4)
echo "$b"; table+=("bench sim-ont jobs: $(echo "$b" | tail -1)")
gpuext map --backend cpu --dump-jobs "$T/real_jobs.npz" -x map-ont -t "$NT" "$REF" "$ONT" >/dev/null 2>&1
b=$(timeout 120 python3 scripts/bench_ksw_extd2.py --jobs "$T/real_jobs.npz" 2>&1 | tee "$OUT/bench_ecoli_ont.log" | tail -4)
echo "$b"; table+=("bench ecoli-ont jobs: $(echo "$b" | tail -1)")

echo "== summary"
printf '%s\n' "${table[@]}" | tee "$OUT/summary.txt"
