"""Regenerate the committed gRPC stubs: ``python -m symphony_tools.generate_stubs``.

The stubs are committed so that installing the controller needs no protoc; run this after
editing symphony.proto (needs grpcio-tools, a dev dependency).
"""

from __future__ import annotations

from pathlib import Path

from grpc_tools import protoc

# controller/: the proto's import path is symphony/api/...
ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    rc = protoc.main(
        [
            "protoc",
            f"-I{ROOT}",
            f"--python_out={ROOT}",
            # Type stubs of the messages: symphony.client's callers get typed replies.
            f"--pyi_out={ROOT}",
            f"--grpc_python_out={ROOT}",
            str(ROOT / "symphony" / "api" / "symphony.proto"),
        ]
    )
    if rc != 0:
        raise SystemExit(rc)


if __name__ == "__main__":
    main()
