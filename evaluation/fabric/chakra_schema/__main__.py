"""Regenerate `et_def_pb2.py` and its type stub from `et_def.proto` (grpcio-tools' protoc)."""

from __future__ import annotations

from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent


def main() -> None:
    rc = protoc.main(
        ["protoc", f"-I{HERE}", f"--python_out={HERE}", f"--pyi_out={HERE}", "et_def.proto"]
    )
    if rc != 0:
        raise SystemExit(rc)


if __name__ == "__main__":
    main()
