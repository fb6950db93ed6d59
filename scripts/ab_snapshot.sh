#!/usr/bin/env bash
# Files of git revision REV into .carry/ab/base (git-ignored; the device call carries .carry), for
# `scripts/device_check.sh abrev`, which times them against the working tree's in one device call.
#   usage: scripts/ab_snapshot.sh REV [FILE ...]   (default: ksw_extd2's launcher and kernel file)
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: scripts/ab_snapshot.sh REV [FILE ...]}
shift
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(gpuext/backends/cuda/ksw_extd2.py gpuext/backends/cuda/kernels/ksw_extd2.cu)
rm -rf .carry/ab/base
for f in "${files[@]}"; do
  mkdir -p ".carry/ab/base/$(dirname "$f")"
  git show "$rev:$f" > ".carry/ab/base/$f"
done
git rev-parse --short "$rev" > .carry/ab/base/REV
echo "[M::ab_snapshot] ${#files[@]} file(s) of $(cat .carry/ab/base/REV) in .carry/ab/base"
