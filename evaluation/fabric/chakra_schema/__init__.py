"""Chakra's execution-trace schema (mlcommons/chakra `schema/protobuf/et_def.proto` @ 21585d8,
the file last changed in a1120dd; Apache License 2.0, its text in `LICENSE` beside it), compiled.

`et_def.proto` is Chakra's, unchanged; `et_def_pb2.py` and `et_def_pb2.pyi` are what protoc
made of it, committed so that reading a trace needs no protoc. The `chakra` package is on no
registry these machines reach (PyPI has neither `chakra` nor `mlcommons-chakra`), hence the copy.
Regenerate after replacing the proto: ``python -m evaluation.fabric.chakra_schema``
(grpcio-tools, a dev dependency).
"""
