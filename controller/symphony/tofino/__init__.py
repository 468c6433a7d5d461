"""Tofino2 build: compile p4src/t2na with p4c's Tofino backend and report its resources."""
