"""Regenerate the committed gRPC stubs: ``python -m symphony.api.generate``.

The stubs are committed so that installing the controller needs no protoc; run this after
editing symphony.proto (needs grpcio-tools, a dev dependency).
"""

from __future__ import annotations

from pathlib import Path


def main() -> None:
    from grpc_tools import protoc

    api = Path(__file__).resolve().parent
    root = api.parent.parent  # controller/: the proto's import path is symphony/api/...
    rc = protoc.main(
        [
            "protoc",
            f"-I{root}",
            f"--python_out={root}",
            f"--grpc_python_out={root}",
            str(api / "symphony.proto"),
        ]
    )
    if rc != 0:
        raise SystemExit(rc)


if __name__ == "__main__":
    main()
