"""Conformance of every implementation of Symphony's per-packet algorithm to the golden model.

One seeded trace generator (`traces`), one `Implementation` protocol (`implementation`), an
adapter per implementation (`adapters`: the golden model's bmv2 and tofino2 variants, the fabric
simulator's numba kernel, bmv2 through the PTF base test, t2na on the Tofino model) and one
runner (`runner`) that feeds the same traces to each and compares the per-packet decisions, the
whole JobState of every job and the flow table with the reference, the golden model on bmv2.

    python -m conformance --traces 200 --packets 1000000

This package is test tooling: the runtime package `symphony` never imports it.
"""
