#!/usr/bin/env bash
# The GPU machine's check (no network there): build offline, run the GPU tests and the regression
# table with --backend cuda, time stock minimap2 against gpuext end to end, and benchmark both kernels
# on recorded jobs. Prints a short table last (also $OUT/summary_<phase>.txt).
#   usage: [BENCH_REPEAT=N] scripts/device_check.sh [tests|map|bench|all|bwa|extd2|extz2|ab|abrev|abknob|teamprobe|e2eprof|mapprof|exit|build]  (two calls fit the 10-minute limit better;
#   bwa: only BWA's ksw_extend2, its GPU tests and its benchmark; BWA_BATCH=0 leaves out the dumps of
#   one bwa mem -t16 batch, which take ~4 minutes to make and time)
# Needs .carry/ (git-ignored, named in the device call's carry): the sdists and the pysam wheel from
# ../shared/tools/device-carry.sh, and datacache/ = data/cache/{src,sets} (scripts/fetch_data.py get --all).
# $DEVICE_TMP: the work folder (job dumps, simulated reads), kept for a second run in the same call (default a new one).
set -uo pipefail
cd "$(dirname "$0")/.."
PHASE=${1:-all}
export PYTHONUNBUFFERED=1 GPUEXT_NO_DOWNLOAD=1 GPUEXT_DATA_CACHE=$PWD/.carry/datacache
export GPUEXT_MAPPY_SDIST=.carry/mappy-2.31.tar.gz GPUEXT_PYBWA_SDIST=.carry/pybwa-2.3.2.tar.gz
OUT=${OUT:-/tmp/gpuext-device}; mkdir -p "$OUT"; T=${DEVICE_TMP:-$(mktemp -d)}; mkdir -p "$T"; NT=$(nproc)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .carry/*.whl && export PYTHONPATH=/tmp/site
table=()
python3 -m pip install -q --no-build-isolation --no-deps -e . >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
python3 scripts/upstream.py oracle minimap2 >/dev/null || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
REF=data/ecoli/e_coli_k12.fa.gz
ONT=$(python3 scripts/fetch_data.py get ecoli-ont | cut -f3)

tests() {
  echo "== GPU tests (kernels: fuzz, recorded jobs, BWA dumps)"
  timeout 330 python3 -m pytest -q -m gpu -p no:benchmark tests/kernel 2>&1 | tee "$OUT/kernel_tests.log" | tail -4
  table+=("GPU tests: $(tail -1 "$OUT/kernel_tests.log")")
  tests_map
}

tests_map() {
  echo "== regression table with --backend cuda"
  GPUEXT_TEST_BACKEND=cuda timeout 240 python3 -m pytest -q -n 4 -p no:benchmark tests/regression 2>&1 \
    | tee "$OUT/regression_cuda.log" | tail -4
  table+=("regression (cuda): $(tail -1 "$OUT/regression_cuda.log")")
}

# the 10,000 simulated ONT reads (made once per call)
big_ont() { [ -f "$T/big_ont.fq.gz" ] || python3 scripts/simulate_reads.py --profile ont -n 10000 --seed 8 -o "$T/big_ont.fq.gz" "$REF"; }

# the recorded ksw_extd2 jobs of set $1 in $T/$1.npz, made once per call: ecoli_ont (the real E. coli reads)
# or big_ont (the 10,000 simulated ONT reads, simulated here first)
dump_jobs() {
  local reads=$ONT
  if [ "$1" = big_ont ]; then big_ont; reads=$T/big_ont.fq.gz; fi
  [ -f "$T/$1.npz" ] || gpuext map --quiet --backend cpu --dump-jobs "$T/$1.npz" -cx map-ont -t "$NT" "$REF" "$reads" >/dev/null
}

# one benchmark of recorded jobs (scripts/bench_ksw_extd2.py): $1 = time limit (s), $2 = the .npz, $3 = its
# log (appended to), $4 = an optional VAR=value for it; prints the summary (rejected, GPU, CPU, ratio, differences)
bench_jobs() {
  env ${4:+"$4"} timeout "$1" python3 scripts/bench_ksw_extd2.py --jobs "$2" ${BENCH_REPEAT:+--repeat $BENCH_REPEAT} 2>&1 \
    | tee -a "$3" | grep -E "^rejected|^GPU|^CPU|speedup|differences" | tr '\n' ' '
}

# gpuext verify of gpuext map --backend cuda against stock minimap2: $1 = the --stats file, then minimap2's
# arguments; prints the verdict line
verify_map() {
  local stats=$1; shift
  timeout 150 gpuext verify -- --backend cuda --stats "$stats" -- "$@" 2>&1 | grep -m1 "gpuext::verify" | cut -d' ' -f2-
}

# ksw_extd2 on recorded jobs, A/B of a launcher knob: $1 = the variable (e.g. GPUEXT_KSW_FB), then its
# values ("" = the default); the job sets are recorded first
bench_extd2() {
  local var=$1; shift
  echo "== ksw_extd2 on recorded jobs (GPU incl. transfers vs stock ksw2 on $NT cores), A/B of $var"
  for name in big_ont ecoli_ont; do
    dump_jobs "$name"
    for v in "$@"; do
      [ "$v" = default ] && v=""
      b=$(bench_jobs 100 "$T/$name.npz" "$OUT/bench_${name}_${var}_${v:-default}.log" "$var=$v")
      echo "$var=${v:-default} $b"; table+=("ksw_extd2 $name $var=${v:-default}: $b")
    done
  done
}

# the A/B benchmarks of $EXTD2_AB: specs "VAR v1 v2 ..." separated by ';' (a value "default" leaves
# VAR empty), default the full-band kernels off / on
bench_ab() {
  IFS=';' read -ra specs <<< "${EXTD2_AB:-GPUEXT_KSW_FB 0 default}"
  for sp in "${specs[@]}"; do bench_extd2 $sp; done
}

# A/B of the working tree against the files in $AB_BASE (default .carry/ab/base, from scripts/ab_snapshot.sh
# REV): per job set ($AB_SETS, default "ecoli_ont big_ont"), $AB_ROUNDS rounds (default 3) of scripts/time_extd2.py in separate
# processes, base (A) then working tree (B); the working tree's files are put back at the end
bench_abrev() {
  local base=${AB_BASE:-.carry/ab/base} mine=$T/ab_mine f
  [ -d "$base" ] || { echo "no $base: run scripts/ab_snapshot.sh REV first"; return 1; }
  mapfile -t files < <(cd "$base" && find . -type f ! -name REV | sed 's|^\./||')
  for f in "${files[@]}"; do mkdir -p "$mine/$(dirname "$f")"; cp "$f" "$mine/$f"; done
  use() { for f in "${files[@]}"; do cp "$1/$f" "$f"; done; }
  echo "== A/B: $(cat "$base/REV" 2>/dev/null) (A) against the working tree (B): ${files[*]}"
  for name in ${AB_SETS:-ecoli_ont big_ont}; do
    dump_jobs "$name"
    for r in $(seq "${AB_ROUNDS:-3}"); do
      for arm in A B; do
        if [ $arm = A ]; then use "$base"; else use "$mine"; fi
        l=$(timeout 120 python3 scripts/time_extd2.py "$T/$name.npz" --runs "${AB_RUNS:-40}" --tag "$name $arm$r" 2>&1 | tail -1)
        echo "$l"; table+=("$l")
      done
    done
  done
  use "$mine"
}

# A/B of a launcher knob by scripts/time_extd2.py (finer than bench_ksw_extd2.py's seconds): AB_KNOB="VAR v1 v2 ..."
# (a value "default" leaves VAR empty), per job set ($AB_SETS, default "ecoli_ont big_ont") $AB_ROUNDS rounds (default 3)
# of every value in separate processes, alternating; the last round's default also checked against the stock code
bench_abknob() {
  local spec=(${AB_KNOB:-GPUEXT_KSW_WAVES 1 default}) name v r l
  local var=${spec[0]}
  echo "== A/B of $var by time_extd2.py: ${spec[*]:1}"
  for name in ${AB_SETS:-ecoli_ont big_ont}; do
    dump_jobs "$name"
    for r in $(seq "${AB_ROUNDS:-3}"); do
      for v in "${spec[@]:1}"; do
        local chk=()
        [ "$v" = default ] && v="" && [ "$r" = "${AB_ROUNDS:-3}" ] && chk=(--check)
        l=$(env "$var=$v" timeout 120 python3 scripts/time_extd2.py "$T/$name.npz" --runs "${AB_RUNS:-30}" "${chk[@]}" \
            --tag "$name $var=${v:-default} r$r" 2>&1 | tail -$(( ${#chk[@]} + 1 )) | tr '\n' ' ')
        echo "$l"; table+=("$l")
      done
    done
  done
}

# the middle team's rounds by its TEAM probes (KSW_PROF, timing only), on E. coli's exact extensions of
# qlen + tlen >= 8,000 alone, per kernel variant of $TEAM_ARMS (GPUEXT_KSW_DEFINES values, "default" for none):
# SM clocks per round (two anti-diagonals) of the jobs of 4,000+ rounds, and the books warp's clocks in its books
# where the kernel prints them (a 12th field). TEAM_CUT=0: on the whole E. coli set (the rounds beside the other
# classes) instead of the cut; TEAM_ENV="VAR=value ...": launcher knobs for every arm (e.g. GPUEXT_KSW_TP_SMEM=57344)
teamprobe() {
  local v l cut=()
  dump_jobs ecoli_ont
  [ "${TEAM_CUT:-8000}" != 0 ] && cut=(--long-extensions "${TEAM_CUT:-8000}")
  echo "== the middle team's rounds (TEAM probes; clocks per round; ${cut[*]:-the whole set} ${TEAM_ENV:-})"
  for v in ${TEAM_ARMS:-default}; do
    [ "$v" = default ] && v=""
    l=$(env ${TEAM_ENV:-} GPUEXT_KSW_DEFINES=KSW_PROF=1,KSW_PROF_WHAT=2${v:+,$v} timeout 120 python3 scripts/time_extd2.py \
        "$T/ecoli_ont.npz" --runs 1 "${cut[@]}" 2>&1 | grep "^TEAM" \
      | awk '{printf "%.0f %.0f\n", $6 / $3, (NF >= 13 ? $13 / $3 : -1)}' | sort -n \
      | awk '{c[NR] = $1; b[NR] = $2} END {m = int((NR + 1) / 2);
             printf "%d jobs of 4000+ rounds: min %s, median %s, max %s", NR, c[1], c[m], c[NR];
             if (b[m] >= 0) printf "; books warp busy %s (median job)", b[m]}')
    echo "teamprobe ${v:-default}: $l"; table+=("teamprobe ${v:-default}: $l")
  done
}

# end to end: stock minimap2 against gpuext map --backend cuda, same flags, output compared
e2e() {
  big_ont
  python3 scripts/simulate_reads.py --profile hifi -n 3000 --seed 7 -o "$T/sim_hifi.fq.gz" "$REF"
  echo "== end to end: stock minimap2 -t$NT vs gpuext map --backend cuda -t$NT (identity checked)"
  for row in "map-ont:$ONT" "map-hifi:$T/sim_hifi.fq.gz" "map-ont:$T/big_ont.fq.gz"; do
    preset=${row%%:*}; reads=${row#*:}; name=$(basename "$reads" | cut -d. -f1)
    r=$(verify_map "$OUT/stats_${preset}_$name.json" -ax "$preset" -t "$NT" -K 50M "$REF" "$reads")
    echo "$preset $name: $r"; table+=("e2e $preset $name: $r")
  done
}

# where gpuext map's time goes end to end: per input and -K, wall seconds of stock minimap2 and of gpuext map
# --backend cpu and cuda (their SAM records checked against stock's), each run's timeline ($GPUEXT_TIMELINE,
# with the shell's start and end) appended to $OUT/timelines.txt and its --stats to $OUT/stats.txt
e2eprof() {
  big_ont
  local mm2 row name reads k b t tag s e
  mm2=$(python3 scripts/upstream.py path minimap2)
  echo "== end to end by backend (wall s)"
  for row in "ecoli:$ONT:" "big_ont:$T/big_ont.fq.gz:" "big_ont:$T/big_ont.fq.gz:20M"; do
    IFS=: read -r name reads k <<< "$row"
    tag="$name${k:+-K$k}"
    local args=(-ax map-ont -t "$NT" ${k:+-K "$k"} "$REF" "$reads") line="$tag:" TIMEFORMAT=%R
    for r in 1 2; do
      t=$( { time "$mm2" "${args[@]}" > "$T/stock.sam" 2>/dev/null; } 2>&1 | tail -1); line+=" stock $t"
      # arms: cpu, cuda, cudaN (N hardware queues), cuda:VAR=value (with that environment variable)
      for b in ${E2E_ARMS:-cpu cuda}; do
        local q="" v=""; [[ $b =~ ^cuda([0-9]+)$ ]] && q=${BASH_REMATCH[1]}; [[ $b == *:* ]] && v=${b#*:}
        s=$(date +%s.%N)
        t=$( { time env ${q:+CUDA_DEVICE_MAX_CONNECTIONS=$q} ${v:+"$v"} GPUEXT_TIMELINE="$T/tl.tsv" gpuext map --quiet \
              --backend "$(echo "${b%%:*}" | tr -d 0-9)" --stats "$T/st.json" "${args[@]}" > "$T/out.sam" 2>"$T/err.txt"; } 2>&1 | tail -1)
        e=$(date +%s.%N)
        cmp -s <(grep -v '^@PG' "$T/stock.sam") <(grep -v '^@PG' "$T/out.sam") && line+=" $b $t" || line+=" $b $t(DIFF)"
        { echo "## $tag $b round $r: shell start $s end $e"; cat "$T/tl.tsv"; } >> "$OUT/timelines.txt"
        { echo "## $tag $b round $r"; cat "$T/st.json"; echo; } >> "$OUT/stats.txt"
      done
    done
    echo "$line"; table+=("$line")
  done
}

bench() {
  e2e
  bench_extd2 GPUEXT_KSW_FB 0 ""   # 0: without the full-band kernels (A/B); "": the default
  bench_bwa
}

bench_bwa() {
  echo "== ksw_extend2 on BWA seed dumps"
  dumps=(--make illumina:100000 --make ont:2000)   # or the dumps carried in build/dumps (same recipe)
  if ls build/dumps/*.dump.gz >/dev/null 2>&1; then
    dumps=(); for f in build/dumps/*.dump.gz; do zcat "$f" > "$T/$(basename "$f" .gz)"; dumps+=(--dump "$T/$(basename "$f" .gz)"); done
  fi
  b=$(timeout 200 python3 scripts/bench_ksw_extend2.py "${dumps[@]}" --repeat 5 2>&1 \
      | tee "$OUT/bench_bwa.log" | tail -6 | tr '\n' ' ')
  echo "$b"; table+=("ksw_extend2: $b")
  [ "${BWA_BATCH:-1}" = 0 ] && return
  # one batch of `bwa mem -t 16` (fastmap.c:394: 10 Mbp per thread = 160 Mbp of reads): what a drop-in
  # hands the GPU at a time; the dumps above are 30 Mbp (Illumina) and 10 Mbp (ONT)
  echo "== ksw_extend2 on one bwa mem -t16 batch (160 Mbp of reads)"
  b=$(timeout 330 python3 scripts/bench_ksw_extend2.py --make illumina:533334 --make ont:32000 --repeat 3 \
      --upload locked --workdir "$T/batch" 2>&1 | tee "$OUT/bench_bwa_batch.log" | tail -6 | tr '\n' ' ')
  echo "$b"; table+=("ksw_extend2 batch: $b")
}

case $PHASE in
  tests) tests ;;
  map) tests_map; e2e ;;   # gpuext map with --backend cuda: the regression table, then end to end
  e2eprof) e2eprof ;;   # E2E_ARMS="cuda cuda32 cuda:VAR=value ..." (default "cpu cuda")
  mapprof) tests_map; e2eprof ;;   # the regression table with --backend cuda, then e2eprof
  exit) timeout 300 python3 scripts/exp_exit.py ;;   # what a CUDA process's start and exit cost
  bench) bench ;;
  bwa)
    timeout 200 python3 -m pytest -q -m gpu -p no:benchmark tests/kernel/test_ksw_extend2.py 2>&1 \
      | tee "$OUT/kernel_tests_bwa.log" | tail -4
    table+=("GPU tests (ksw_extend2): $(tail -1 "$OUT/kernel_tests_bwa.log")")
    bench_bwa ;;
  extd2)   # minimap2's ksw_extd2 only: its GPU tests and the A/B benchmarks ($EXTD2_AB as for ab,
           # default the full-band kernels off / on)
    timeout 280 python3 -m pytest -q -m gpu -p no:benchmark tests/kernel/test_ksw_extd2.py tests/kernel/test_recorded_jobs.py \
      2>&1 | tee "$OUT/kernel_tests_extd2.log" | tail -4
    table+=("GPU tests (ksw_extd2): $(tail -1 "$OUT/kernel_tests_extd2.log")")
    bench_ab ;;
  ab) bench_ab ;;   # only the A/B benchmarks of ksw_extd2, e.g. EXTD2_AB="GPUEXT_KSW_PRIO 0 default;GPUEXT_KSW_REG 10"
  abrev) bench_abrev ;;   # the working tree's launcher against a revision's (scripts/ab_snapshot.sh REV first)
  teamprobe) teamprobe ;;   # the middle team's rounds by its probes, per kernel variant: TEAM_ARMS="default KSW_X=1 ..."
  abknob) bench_abknob ;;   # a launcher knob's values by time_extd2.py: AB_KNOB="VAR v1 v2 ..." (default upload waves off / on)
  extz2)   # minimap2's ksw_extz2 (one gap cost): its GPU tests, the regression table with --backend cuda,
           # its benchmark on E. coli's jobs recorded with -O4 -E2, and gpuext map -O4 -E2 end to end
    timeout 240 python3 -m pytest -q -m gpu -p no:benchmark tests/kernel/test_ksw_extz2.py 2>&1 \
      | tee "$OUT/kernel_tests_extz2.log" | tail -4
    table+=("GPU tests (ksw_extz2): $(tail -1 "$OUT/kernel_tests_extz2.log")")
    tests_map
    gpuext map --quiet --backend cpu --dump-jobs "$T/ecoli_z2.npz" -cx map-ont -O4 -E2 -t "$NT" "$REF" "$ONT" >/dev/null
    b=$(bench_jobs 200 "$T/ecoli_z2.npz" "$OUT/bench_ecoli_z2.log")
    echo "$b"; table+=("ksw_extz2 ecoli_ont -O4 -E2: $b")
    r=$(verify_map "$OUT/stats_z2.json" -ax map-ont -O4 -E2 -t "$NT" "$REF" "$ONT")
    echo "$r"; table+=("e2e map-ont -O4 -E2 reads: $r") ;;
  build) ;;   # only the build (for profiling runs after it)
  *) tests; bench ;;
esac
echo "== summary ($PHASE)"
printf '%s\n' "${table[@]}" | tee "$OUT/summary_$PHASE.txt"
