"""Issuing TLS certificates with openssl for test clusters."""

from __future__ import annotations

import subprocess
from pathlib import Path


def openssl(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True)


def issue(directory: Path, name: str, subject: str, extensions: str | None = None) -> None:
    """A P-256 key and a certificate for ``subject`` signed by the CA in ``directory``."""
    openssl(
        "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject,
        cwd=directory,
    )  # fmt: skip
    extra: list[str] = []
    if extensions is not None:
        (directory / f"{name}.ext").write_text(extensions)
        extra = ["-extfile", f"{name}.ext"]
    openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", *extra,
        cwd=directory,
    )  # fmt: skip
