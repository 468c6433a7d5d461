#!/bin/bash
# Redo the simulator's column of stored bmv2 fabric runs with the current kernel: copy each
# measurement directory, drop its sim.csv, and run its own command again over the copy (every
# bmv2 run is stored, so none is run again; only sim.csv is recomputed and the summary rewritten).
set -u
cd "$(dirname "$0")/../../.."
for d in "$@"; do
  dst=build/simv6/$d
  [ -f "$dst/.done" ] && continue
  rm -rf "$dst"; mkdir -p "$(dirname "$dst")"; cp -r docs/measurements/$d "$dst"; rm -f "$dst/sim.csv"
  # runs stored before the ACK class was a setting had ACKs in the data queue, as now by default
  .venv/bin/python -c "import json;p='$dst/settings.json';s=json.load(open(p));s.setdefault('ack_class','data');json.dump(s,open(p,'w'),indent=2,sort_keys=True)"
  cmd=$(.venv/bin/python -c "import json,sys;print(json.load(open('$dst/meta.json'))['command'])")
  args=$(echo "$cmd" | sed -e 's/^python -m evaluation.hosts.fabric_experiment //' -e 's/--out [^ ]*//')
  echo "== $d: $args"
  PYTHONPATH=. .venv/bin/python -m evaluation.hosts.fabric_experiment $args --out "$dst" > "$dst.log" 2>&1
  rc=$?; echo "rc=$rc"; [ $rc = 0 ] && touch "$dst/.done"
done
