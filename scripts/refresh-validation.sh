#!/usr/bin/env bash
# Regenerates data/model-validation.json: the default model's held-out figures (lomo, logo) that
# `predict` shows and uses to widen intervals. Run after any change to the model or its data.
# Usage: scripts/refresh-validation.sh [path/to/epochcast]   (default build/epochcast)
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${1:-build/epochcast}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cli" fit -o "$tmp/model.json" >/dev/null
"$cli" eval --protocol lomo --json >"$tmp/lomo.json"
"$cli" eval --protocol logo --json >"$tmp/logo.json"
python3 - "$tmp" data/model-validation.json <<'PY'
import datetime, json, sys
tmp, out = sys.argv[1], sys.argv[2]
model = json.load(open(f"{tmp}/model.json"))
protocols = []
for name in ("lomo", "logo"):
    p = json.load(open(f"{tmp}/{name}.json"))
    p.pop("dataset", None)  # a machine-local path
    protocols.append(p)
doc = {
    "model_schema_hash": model["schema_hash"],
    "training_pairs": model["training"]["pairs"],
    "options": model["options"],
    "generated": datetime.date.today().isoformat(),
    "command": "epochcast eval --protocol lomo --json; epochcast eval --protocol logo --json "
               "(default options, bundled dataset); scripts/refresh-validation.sh",
    "protocols": protocols,
}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
for p in protocols:
    print(f"{p['protocol']}: MAPE {p['mape_pct']:.2f} %, coverage {p['interval'].get('coverage_pct')}")
PY
