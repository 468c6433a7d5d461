#!/usr/bin/env bash
# The Debian packages the operator-side integration tests run for real (tests/integration/
# test_slurm.py, tests/test_deploy_prometheus.py, the Prometheus part of test_controller_bmv2.py):
# Slurm (slurm-wlm), munge, Prometheus (with promtool), openssl for the client's mTLS test
# certificates (tests/test_client.py), the PostgreSQL server for the replicated controllers'
# store (tests/test_jobs_pg_store.py, tests/integration/test_replicas*.py: each test runs its own
# cluster, symphony_tools/postgres.py), and nftables, with which bmv2_env/start.sh closes bmv2's
# Thrift port to everything but loopback, and ping for the fabric's test
# (tests/integration/test_fabric_bmv2.py). Idempotent: installs only what is
# missing. With arguments (binary names, e.g. `nft`), only those (the experiments need nft
# alone). The tests start and stop the daemons themselves; this script makes sure none of the
# packages' own services is started here (policy-rc.d), so nothing is left running.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"
declare -A pkg_of=(
  [slurmctld]=slurm-wlm [slurmd]=slurm-wlm [sbatch]=slurm-wlm
  [munged]=munge [prometheus]=prometheus [promtool]=prometheus [openssl]=openssl
  [nft]=nftables [ping]=iputils-ping
)
missing=()
wanted=("$@")
[ ${#wanted[@]} = 0 ] && wanted=("${!pkg_of[@]}" initdb)
for bin in "${wanted[@]}"; do
  if [ "$bin" = initdb ]; then
    # Debian keeps initdb and pg_ctl off PATH, under the server's major version.
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
  elif [ -z "${pkg_of[$bin]:-}" ]; then
    echo "install_test_deps: no package known for $bin" >&2
    exit 2
  else
    command -v "$bin" >/dev/null || missing+=("${pkg_of[$bin]}")
  fi
done
[ ${#missing[@]} = 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [ "$(id -u)" != 0 ]; then
  echo "install_test_deps: need root to apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install_test_deps: apt-get install ${missing[*]}"
policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && added_policy=1
fi
cleanup() { [ $added_policy = 1 ] && rm -f "$policy"; return 0; }
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
# Another apt may be running (unattended upgrades, a second test run): wait for its lock.
lock=(-o DPkg::Lock::Timeout=900)
apt-get "${lock[@]}" update -qq
apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
