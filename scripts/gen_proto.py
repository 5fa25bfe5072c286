"""Regenerate the committed gRPC stubs in src/citadel/wire/gen from proto/citadel/v1.

Run with `make proto` (it needs grpcio-tools, a dev dependency). The stubs are
committed so that installing citadel needs no code generation step.

protoc names the modules after the proto package (`citadel.v1`), which would
clash with the citadel package itself, so the imports between the generated
modules are rewritten to `citadel.wire.gen`.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "proto"
PROTOS = ("citadel/v1/retrieval.proto", "citadel/v1/answer.proto")
OUT = ROOT / "src" / "citadel" / "wire" / "gen"
HEADER = (
    "# Generated from proto/citadel/v1/*.proto by grpcio-tools: do not edit.\n"
    "# Regenerate with `make proto` (scripts/gen_proto.py).\n"
)
_IMPORT = re.compile(r"^from citadel\.v1 import ", re.MULTILINE)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        status = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{PROTO_ROOT}",
                f"--python_out={tmp}",
                f"--pyi_out={tmp}",
                f"--grpc_python_out={tmp}",
                *(str(PROTO_ROOT / proto) for proto in PROTOS),
            ]
        )
        if status != 0:
            print(f"protoc failed with status {status}", file=sys.stderr)
            return 1
        OUT.mkdir(parents=True, exist_ok=True)
        for old in OUT.glob("*_pb2*.py*"):
            old.unlink()
        generated = sorted((Path(tmp) / "citadel" / "v1").iterdir())
        for path in generated:
            text = _IMPORT.sub("from citadel.wire.gen import ", path.read_text(encoding="utf-8"))
            (OUT / path.name).write_text(HEADER + text, encoding="utf-8")
            print(f"wrote {(OUT / path.name).relative_to(ROOT)}")
    (OUT / "__init__.py").write_text(
        HEADER.replace("by grpcio-tools: do not edit", "(the package marker)"), encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
