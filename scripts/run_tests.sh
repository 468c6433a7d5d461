#!/usr/bin/env bash
# The one test command (README: `make test`): lint, unit tests, the Tofino2 compile and the
# bmv2/PTF suite. Groups whose tools are missing are skipped LOUDLY, by name, with the missing
# binary; the closing line counts every test: "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/opt/p4/bin"
venv=${VENV:-.venv}
mkdir -p run
passed=0 failed=0 skipped=0
skipped_groups=()

count_pytest() {  # "... 12 passed, 1 failed, 3 skipped ..." from a pytest summary line
  local line=$1 n
  for kind in passed failed error skipped; do
    n=$(grep -oE "[0-9]+ $kind" <<<"$line" | grep -oE '^[0-9]+' || true)
    n=${n:-0}
    case $kind in passed) passed=$((passed + n)) ;; failed|error) failed=$((failed + n)) ;;
      skipped) skipped=$((skipped + n)) ;; esac
  done
}

echo "== lint (ruff)"
if "$venv/bin/ruff" check . && "$venv/bin/ruff" format --check . >/dev/null; then
  passed=$((passed + 1))
else
  echo "lint FAILED"; failed=$((failed + 1))
fi

# The controller's bmv2 integration tests need the compiled program too: build it first.
if command -v p4c-bm2-ss >/dev/null; then
  echo "== make build (bmv2)"
  if make -s build; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi

echo "== unit and integration tests (pytest)"
"$venv/bin/python" -m pytest -q -rs -m "not tofino2" tests 2>&1 | tee run/pytest.log
count_pytest "$(tail -n 1 run/pytest.log)"

echo "== Tofino2 compile"
if "$venv/bin/python" -m symphony.tofino.build --check-toolchain >/dev/null 2>&1; then
  if make -s tofino2; then
    passed=$((passed + 1))
    # The Tofino2 P4Info against bmv2's (one controller code path), stages, outputs.
    "$venv/bin/python" -m pytest -q -rs -m tofino2 tests 2>&1 | tee run/pytest-tofino2.log
    count_pytest "$(tail -n 1 run/pytest-tofino2.log)"
  else
    failed=$((failed + 1))
  fi
else
  why=$("$venv/bin/python" -m symphony.tofino.build --check-toolchain 2>&1 | tail -n 1)
  skipped=$((skipped + 1)); skipped_groups+=("Tofino2 compile (make tofino2): $why")
fi

echo "== bmv2 / PTF suite"
missing=""
for b in p4c-bm2-ss simple_switch_grpc; do command -v "$b" >/dev/null || missing="$missing $b"; done
[ "$(id -u)" = 0 ] || missing="$missing root(veth)"
n_ptf=$(grep -hE '^class .*\(SymphonyTest\)' ptf_tests/test_*.py | wc -l)
if [ -z "$missing" ]; then
  scripts/run_ptf.sh 2>&1 | tee run/ptf.out
  ran=$(grep -oE '^Ran [0-9]+ test' run/ptf.out | grep -oE '[0-9]+' || echo 0)
  bad=$(grep -oE '(failures|errors)=[0-9]+' run/ptf.out | awk -F= '{s += $2} END {print s + 0}')
  bad=${bad:-0}
  if [ "$ran" = 0 ]; then bad=$n_ptf; fi
  passed=$((passed + ran - bad)); failed=$((failed + bad))
else
  skipped=$((skipped + n_ptf))
  skipped_groups+=("bmv2/PTF suite ($n_ptf tests in ptf_tests/): missing$missing")
fi

echo
for g in "${skipped_groups[@]}"; do
  echo "!!!!!!!! SKIPPED: $g"
done
echo "symphony: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
