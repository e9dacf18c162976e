#!/usr/bin/env bash
# The GUI screenshots of docs/gui.md and the README, made by simrun-gui's headless mode.
#   docs/images/make_screenshots.sh        (from the repository root, after a build)
set -euo pipefail
cd "$(dirname "$0")/../.."
gui=build/gui/simrun-gui
shot() { xvfb-run -a -s '-screen 0 1600x1000x24' "$gui" "$@"; }
plan=$(mktemp --suffix=.json)
cat > "$plan" <<'PLAN'
{"model": "llama3-70b", "tokens": 1.4e12, "max_gpus": 1024, "top_k": 5,
 "gpus": [{"gpu": "h100-sxm", "usd_per_gpu_hour": 2.5}, {"gpu": "b200", "usd_per_gpu_hour": 5.0}]}
PLAN
shot --scenario examples/llama3-70b-h100.json --screenshot docs/images/gui-results.png
shot --scenario examples/llama3-405b-16k-h100.json --view timeline --screenshot docs/images/gui-timeline.png
shot --scenario examples/llama3-405b-16k-h100.json --view memory --screenshot docs/images/gui-memory.png
shot --scenario examples/llama3-70b-h100.json --pin --set layout.tp=4 --set layout.dp=64 --view compare \
     --screenshot docs/images/gui-compare.png
shot --scenario examples/llama3-70b-h100.json --plan "$plan" --view plan --screenshot docs/images/gui-plan.png
rm -f "$plan"
