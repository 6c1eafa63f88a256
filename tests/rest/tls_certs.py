"""Test certificates made with the openssl command: a CA, a server and a client certificate (PEM)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import attrs


@attrs.frozen
class Certs:
    ca: Path  # CA certificate: the trust store of both sides
    server_store: Path  # server private key + certificate, Kafka's PEM key store layout
    client_cert: Path
    client_key: Path
    encrypted_store: Path  # the server's key encrypted with KEY_PASSWORD, + certificate


KEY_PASSWORD = "store-pass"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(directory: Path) -> Certs:
    d = directory
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", "/CN=headrace-test-ca", cwd=d)
    for name, extra in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost"), ("client", "extendedKeyUsage=clientAuth")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=d)
        (d / f"{name}.ext").write_text(extra + "\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=d)
    (d / "server-store.pem").write_text((d / "server.key").read_text() + (d / "server.pem").read_text())
    _openssl("pkey", "-in", "server.key", "-aes256", "-passout", f"pass:{KEY_PASSWORD}", "-out", "server-enc.key",
             cwd=d)
    (d / "server-enc-store.pem").write_text((d / "server-enc.key").read_text() + (d / "server.pem").read_text())
    return Certs(d / "ca.pem", d / "server-store.pem", d / "client.pem", d / "client.key", d / "server-enc-store.pem")
