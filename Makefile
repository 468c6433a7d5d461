# Symphony: build the P4 program, run bmv2 and the controller, test everything.
# `make help` lists the targets.

SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
# p4c and bmv2 built from source live in /opt/p4/bin; packaged ones are on PATH already.
export PATH := $(PATH):/opt/p4/bin

VENV ?= .venv
PY := $(VENV)/bin/python
BUILD := build
P4SRC := $(shell find p4src -name '*.p4')
P4C_BMV2 ?= p4c-bm2-ss
P4C ?= p4c
CONFIG ?= examples/bmv2.toml

.PHONY: help setup build run fabric stop controller test unit ptf fuzz lint tofino2 bench experiment experiment-long experiment-fabric evaluation regime-map evaluation-workloads shell clean

help:
	@echo "make setup     Python environment in $(VENV) (the runtime, symphony-tools and the dev tools)"
	@echo "make build     compile p4src for bmv2 -> $(BUILD)/bmv2/{symphony.json,symphony.p4info.txtpb}"
	@echo "make run       build, start bmv2 (bmv2_env/start.sh) and the controller ($(CONFIG))"
	@echo "make fabric    build, start a bmv2 leaf-spine (LEAVES=$(LEAVES) SPINES=$(SPINES)"
	@echo "               HOSTS_PER_LEAF=$(HOSTS_PER_LEAF), hosts in namespaces sf-h*) and the controller on it"
	@echo "make stop      stop bmv2 and the fabric, remove their ports, namespaces and nft tables"
	@echo "make test      everything: lint, unit tests, Tofino2 compile and the bmv2/PTF suite"
	@echo "make ptf       only the PTF suite on bmv2 (builds and starts bmv2 itself)"
	@echo "make fuzz      $(FUZZ_PACKETS) fuzzed frames through bmv2 and the model (frames/s), API fuzzing"
	@echo "make tofino2   compile for Tofino2 (t2na) -> $(BUILD)/tofino2/ and the coexistence program"
	@echo "               (fabric_demo.p4) -> $(BUILD)/tofino2-fabric_demo/, each with a resource report"
	@echo "make bench     bmv2 packet-rate ratio and controller install latency"
	@echo "make experiment closed loop on bmv2 (DCQCN hosts, Fig. 9 and a ring) -> $(BUILD)/experiments/"
	@echo "               (resumes an interrupted run; EXPERIMENT_ARGS=--fresh starts over)"
	@echo "make experiment-long  Fig. 9 with 10x longer flows (~10 min) -> $(BUILD)/experiments-long/"
	@echo "make experiment-fabric ring all-reduces across the bmv2 leaf-spine -> $(BUILD)/experiments-fabric*/ (PROFILES=\"$(PROFILES)\": the NICs; ACK_CLASSES=\"$(ACK_CLASSES)\")"
	@echo "make evaluation  fabric simulator: every scenario, CSV + PNG -> $(BUILD)/evaluation/"
	@echo "make regime-map  which to deploy, per regime (simulator, Dask; CLUSTER=$(CLUSTER)) -> $(BUILD)/regime-map/"
	@echo "make evaluation-workloads  Table 2 at 128 nodes and Fig. 7c (training jobs; Dask) -> $(BUILD)/training/"
	@echo "make shell     p4runtime-shell against the running switch (its own environment)"

# The runtime (symphony, with the dev tools) and the repository's tooling (symphony-tools,
# controller/symphony_tools/pyproject.toml): two distributions, both editable.
$(VENV)/.installed: pyproject.toml controller/symphony_tools/pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]' -e controller/symphony_tools
	touch $@

setup: $(VENV)/.installed

$(BUILD)/bmv2/symphony.json: $(P4SRC)
	@command -v $(P4C_BMV2) >/dev/null || { echo "make build: $(P4C_BMV2) not found (install p4c: see README.md)"; exit 1; }
	@mkdir -p $(BUILD)/bmv2
	$(P4C_BMV2) --arch v1model --std p4-16 -I p4src \
	  --p4runtime-files $(BUILD)/bmv2/symphony.p4info.txtpb \
	  -o $@ p4src/v1model/symphony.p4 2> $(BUILD)/bmv2/p4c.log || { cat $(BUILD)/bmv2/p4c.log; exit 1; }
	@if [ -s $(BUILD)/bmv2/p4c.log ]; then cat $(BUILD)/bmv2/p4c.log; echo "make build: the compiler warned"; exit 1; fi

build: $(BUILD)/bmv2/symphony.json

run: build setup
	bmv2_env/start.sh
	$(VENV)/bin/symphony-controller --config $(CONFIG)

# A leaf-spine of bmv2 switches, each host in its own network namespace (symphony_tools/
# fabric.py, docs/fabric.md); the controller's config is written to $(FABRIC_CONFIG).
LEAVES ?= 2
SPINES ?= 2
HOSTS_PER_LEAF ?= 2
FABRIC_CONFIG := run/fabric/controller.toml
fabric: build setup
	$(PY) -m symphony_tools.fabric up --leaves $(LEAVES) --spines $(SPINES) \
		--hosts-per-leaf $(HOSTS_PER_LEAF) --config $(FABRIC_CONFIG) $(FABRIC_ARGS)
	$(VENV)/bin/symphony-controller --config $(FABRIC_CONFIG)

stop:
	bmv2_env/stop.sh
	@if [ -x $(PY) ]; then $(PY) -m symphony_tools.fabric down; \
	else echo "make stop: no $(VENV): the fabric (if any) was not stopped; run make setup"; fi

test: setup
	scripts/run_tests.sh

unit: setup
	$(PY) -m pytest -q tests

ptf: setup build
	scripts/run_ptf.sh

# The full packet fuzz (the test command runs 1,000 frames) and the API properties with more
# examples (docs/robustness.md). Starts its own bmv2 like `make ptf`: run it under the bmv2 lock.
FUZZ_PACKETS ?= 10000
FUZZ_SEED ?= 2
FUZZ_EXAMPLES ?= 1000
fuzz: setup build
	@mkdir -p run
	SYMPHONY_FUZZ_PACKETS=$(FUZZ_PACKETS) SYMPHONY_FUZZ_SEED=$(FUZZ_SEED) scripts/run_ptf.sh test_fuzz
	SYMPHONY_API_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -s tests/test_api_fuzz.py

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

tofino2: setup
	$(PY) -m symphony_tools.tofino_build --out $(BUILD)/tofino2
	$(PY) -m symphony_tools.tofino_build --program fabric_demo --out $(BUILD)/tofino2-fabric_demo

bench: setup build
	scripts/run_bench.sh

# Starts and stops its own bmv2 and controller (evaluation/hosts/testbed.py); needs root.
experiment: setup build
	scripts/install_test_deps.sh nft
	$(PY) -m evaluation.hosts --out $(BUILD)/experiments $(EXPERIMENT_ARGS)

# Fig. 9 with flows 10 times longer than `make experiment`'s (a tenth of the paper's 1 GB at
# 10 Gb/s against DCQCN's recovery: the ratio is flow packets over the ramp's ~16,000 packets,
# whatever the time scale). At 8,000 packets/s bmv2 and the hosts fell behind (one flow alone
# took 4x its time); flows past DCQCN's byte counter need a deeper queue than 1,000 packets
# (docs/experiments.md, "With longer flows").
experiment-long: setup build
	scripts/install_test_deps.sh nft
	$(PY) -m evaluation.hosts --only pair --offsets 0.5 --ks 0.01 --gates 8/0.001 --reps 2 \
		--line-pps 4000 --flow-packets 100000 --queue-depth 10000 \
		--out $(BUILD)/experiments-long $(EXPERIMENT_ARGS)

# The paper's Fig. 1 in real frames (evaluation/hosts/fabric_experiment.py): ring all-reduces
# across the bmv2 leaf-spine, baseline / the paper's policy / the shipped one, on held-out seeds,
# the simulator's same configuration beside each; 2x2x2 (one ring of 4) at 1,000 packets/s and
# 2x2x4 (two rings of 4 sharing the uplinks) at 500: 4,000 data frames a second in all, as the
# regime search plans (regime_search.FRAMES_PER_S). More lags bmv2 and the hosts' loop: at 2,000
# frames/s per link 2x2x2's frames waited 9-29 frames in bmv2 against 0-4 in the simulator,
# whose baseline read 27 % faster than bmv2's under dcqcn-paper (one run of three) and 6 %
# under hpcc-config; at 1,000 a lone flow on 2x2x4 waited 150 frames against 1
# (docs/experiments.md, "One NIC in both instruments"). Then a spine SIGKILLed and restarted
# under traffic (fabric_failover.py: reroute, restore, losses).
# Starts and stops its own fabric and controller; needs root. Resumes where it stopped.
# PROFILES: the NICs both instruments run, one after the other (evaluation/fabric/dcqcn.py,
# docs/nic.md): dcqcn-paper (the DCQCN paper's, rate only: what ConnectX NICs resemble),
# hpcc-config (the paper's stack: HPCC's window, an ACK per packet), also astra-config,
# hpcc-run-dcqcn. Each profile's runs go to $(BUILD)/experiments-fabric[-8]/<profile>/;
# fabric_table puts them side by side (docs/experiments.md, "One NIC in both instruments").
# FABRIC_ARGS_<profile>: HPCC's Mellanox rules check the rate every 4 us, so the calibration
# plans a quarter of the rate and 70 s runs for them, in which this machine's 40-160 ms stalls
# spoiled most attempts (2026-12-05); at the planned rate a third of the attempts spoil and 12
# reruns keep every cell (docs/experiments.md).
# ACK_CLASSES: where the switches put ACKs, NAKs and CNPs (docs/ack_priority.md): data (their
# flow's queue) and priority (the ACK class, `ack_priority` on every switch; the runs go to
# <profile>-ack-priority/); fabric_table measures the class's rows against DCQCN alone.
PROFILES ?= dcqcn-paper hpcc-config
ACK_CLASSES ?= data priority
ACK_DIR_data =
ACK_DIR_priority = -ack-priority
MELLANOX_ARGS = --calibrate-s 0 --max-reruns 12
FABRIC_ARGS_hpcc-config = $(MELLANOX_ARGS)
FABRIC_ARGS_astra-config = $(MELLANOX_ARGS)
FABRIC_ARGS_hpcc-run-dcqcn = $(MELLANOX_ARGS)
experiment-fabric: setup build
	scripts/install_test_deps.sh nft ping
	$(foreach c,$(ACK_CLASSES),$(foreach p,$(PROFILES),\
		$(PY) -m evaluation.hosts.fabric_experiment --profile $(p) $(FABRIC_ARGS_$(p)) \
			--ack-class $(c) --line-pps 1000 \
			--out $(BUILD)/experiments-fabric/$(p)$(ACK_DIR_$(c)) $(EXPERIMENT_ARGS) && \
		$(PY) -m evaluation.hosts.fabric_experiment --profile $(p) $(FABRIC_ARGS_$(p)) \
			--ack-class $(c) --hosts-per-leaf 4 --rings 2 --line-pps 500 \
			--out $(BUILD)/experiments-fabric-8/$(p)$(ACK_DIR_$(c)) $(EXPERIMENT_ARGS) && )) true
	$(PY) -m evaluation.hosts.fabric_table $(foreach c,$(ACK_CLASSES),$(foreach p,$(PROFILES),\
		$(BUILD)/experiments-fabric/$(p)$(ACK_DIR_$(c)) $(BUILD)/experiments-fabric-8/$(p)$(ACK_DIR_$(c)))) \
		| tee $(BUILD)/experiments-fabric/table.md
	$(PY) -m evaluation.hosts.fabric_failover | tee $(BUILD)/experiments-fabric/spine-lost.txt

evaluation: setup
	@mkdir -p $(BUILD)/evaluation
	$(PY) -m evaluation.fabric.golden_diff --packets 1000000 | tee $(BUILD)/evaluation/golden_diff.txt
	$(PY) bench/fabric_speed.py | tee $(BUILD)/evaluation/speed.txt
	$(PY) -m evaluation.fabric.analysis --seeds 20 | tee $(BUILD)/evaluation/collision_bound.txt
	$(PY) -m evaluation.fabric.crossval --seeds 10 | tee $(BUILD)/evaluation/crossval.md
	$(PY) -m evaluation.fabric --out $(BUILD)/evaluation
	$(PY) -m evaluation.fabric --no-pfc --scenario ecmp --scenario ecmp-128 --scenario imbalance \
		--scenario late-start --no-plots --out $(BUILD)/evaluation-nopfc
	$(PY) -m evaluation.fabric.policy_study --first-seed 100 --seeds 20 --sweep-seeds 10 \
		--out $(BUILD)/evaluation/policy-32
	$(PY) -m evaluation.fabric.policy_study --first-seed 100 --seeds 10 --only table1-128 \
		--variant baseline --variant gate8-k0.001 --out $(BUILD)/evaluation/policy-128

# The regime map on Dask: `local` starts a LocalCluster of JOBS workers; CLUSTER=tcp://host:8786
# uses a running scheduler. Resumable (the store in $(BUILD)/regime-map/runs.jsonl).
CLUSTER ?= local
JOBS ?= 2
REGIME_MAP_ARGS ?= --hosts 32 128
regime-map: setup
	$(PY) -m evaluation.fabric.regime_map $(REGIME_MAP_ARGS) --cluster $(CLUSTER) --jobs $(JOBS) \
		--out $(BUILD)/regime-map
	$(PY) -m evaluation.fabric.flow_stalls --seed 100 --out $(BUILD)/regime-map/flow-stalls

# The paper's training-job figures (docs/training.md): Table 2 at 128 nodes and Fig. 7c (about an
# hour of CPU; Fig. 6 at 128 nodes, `--part fig6`, is ~10 CPU-hours: 126 Transformer runs),
# one iteration per run, on Dask as the regime map; resumable ($(BUILD)/training/runs.jsonl).
WORKLOADS_ARGS ?= --part table2 --part fig7c --hosts 128

evaluation-workloads: setup
	$(PY) -m evaluation.fabric.training_eval $(WORKLOADS_ARGS) --cluster $(CLUSTER) --jobs $(JOBS) \
		--out $(BUILD)/training

shell:
	tools/p4shell.sh

clean:
	rm -rf $(BUILD) run
