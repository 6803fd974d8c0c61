#!/usr/bin/env bash
# Stages of a finished `darling pipeline` run rerun at another commit and at this tree, one after the other on the
# same earlier stages (the same trained policies): a stage's seconds before and after a change, side by side.
#
#   bench/rerun_stages.sh RUN PRESET BEFORE_REV OUT STAGE [STAGE ...]
#   bench/rerun_stages.sh runs/pipeline cpu 9ec2d2c runs/sbs labels eval-math eval-novelty compare
#
# RUN is copied to OUT/before and OUT/after; each copy's STAGEs (their folders and records) are removed and
# `darling pipeline --preset PRESET` resumes them, BEFORE_REV from a git worktree put first on PYTHONPATH (the
# repository root is the `darling` package). The stage times are in each copy's stages.json and OUT/*.log.
set -euo pipefail
[ $# -ge 5 ] || { sed -n 2,11p "$0"; exit 2; }
RUN=$1 PRESET=$2 BEFORE=$3 OUT=$4
shift 4
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/old" && git -C "$ROOT" worktree add -f "$OUT/old/darling" "$BEFORE" -q
for side in before after; do
  copy="$OUT/$side"
  rm -rf "$copy" && cp -r "$RUN" "$copy"
  "$ROOT/.venv/bin/python" - "$copy" "$@" <<'PY'
import json, shutil, sys
from pathlib import Path
run, stages = Path(sys.argv[1]), sys.argv[2:]
book = json.loads((run / "stages.json").read_text())
others = set(book["stages"]) - set(stages)  # rl-warmup is its own stage, not one of rl's folders
for stage in stages:
    book["stages"].pop(stage, None)
    for folder in [run / stage, *run.glob(f"{stage}-*")]:
        if folder.name not in others and folder.exists():
            shutil.rmtree(folder) if folder.is_dir() else folder.unlink()
(run / "stages.json").write_text(json.dumps(book))
PY
  pythonpath=""
  [ "$side" = before ] && pythonpath="$OUT/old"
  start=$(date +%s)
  PYTHONPATH=$pythonpath "$ROOT/.venv/bin/darling" pipeline --preset "$PRESET" --output "$copy" > "$OUT/$side.log" 2>&1
  echo "$side: $(( $(date +%s) - start )) s"
  grep -a "done in" "$OUT/$side.log" || true
done
git -C "$ROOT" worktree remove --force "$OUT/old/darling"
