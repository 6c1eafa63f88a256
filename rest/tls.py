"""TLS for ``https://`` listeners, from Kafka Connect's ``listeners.https.ssl.*`` / ``ssl.*`` settings.

As in Kafka Connect, the ``listeners.https.``-prefixed settings are taken all or nothing: when any of
them is set, the unprefixed ``ssl.*`` ones are ignored. Python's ssl module reads PEM files only, so
the key store and trust store must be PEM (``ssl.keystore.type=PEM``, or unset and the file in PEM);
a JKS or PKCS12 store is refused with the command that converts it.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from cheroot.ssl.builtin import BuiltinSSLAdapter

from rest.context import ConfigSource, setting
from rest.responses import RestConfigError

__all__ = ["HTTPS_PREFIX", "TlsConfigError", "https_settings", "ssl_adapter"]

HTTPS_PREFIX = "listeners.https."

_SETTINGS = (
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.cipher.suites",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
)

_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


class TlsConfigError(RestConfigError):
    """An SSL setting of an https listener that cannot be used; names the key and why."""


def https_settings(config: ConfigSource) -> dict[str, str]:
    """The ssl.* settings that apply to https listeners, with the key name each came from."""
    def read(key: str) -> str | None:
        value = setting(config, key)
        return None if value is None or str(value).strip() == "" else str(value).strip()

    prefixed = {key: read(HTTPS_PREFIX + key) for key in _SETTINGS}
    if any(value is not None for value in prefixed.values()):
        return {HTTPS_PREFIX + key: value for key, value in prefixed.items() if value is not None}
    return {key: value for key in _SETTINGS if (value := read(key)) is not None}


def _lookup(found: dict[str, str], key: str) -> tuple[str, str | None]:
    for name in (HTTPS_PREFIX + key, key):
        if name in found:
            return name, found[name]
    return key, None


def _pem_file(found: dict[str, str], store: str) -> tuple[str, Path] | None:
    location_key, location = _lookup(found, f"ssl.{store}.location")
    if location is None:
        return None
    type_key, store_type = _lookup(found, f"ssl.{store}.type")
    path = Path(location)
    try:
        head = path.read_bytes()[:4096]
    except OSError as e:
        raise TlsConfigError(f"{location_key}: cannot read {location}: {e.strerror or e}") from None
    kind = (store_type or "").upper()
    if kind not in ("", "PEM"):
        raise TlsConfigError(
            f"{type_key}={store_type}: Headrace reads PEM {store}s only; convert {location} to PEM, e.g. "
            f"'keytool -importkeystore -srckeystore {location} -deststoretype PKCS12 -destkeystore x.p12' "
            "then 'openssl pkcs12 -in x.p12 -out store.pem', and set the type to PEM"
        )
    if b"-----BEGIN" not in head:
        raise TlsConfigError(
            f"{location_key}: {location} is not a PEM file (a JKS or PKCS12 store?); Headrace reads PEM "
            f"{store}s only: convert it with openssl and set {type_key}=PEM"
        )
    return location_key, path


def ssl_adapter(config: ConfigSource) -> BuiltinSSLAdapter:
    """The cheroot TLS adapter an https listener serves with."""
    found = https_settings(config)
    for inline in ("ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates"):
        key, value = _lookup(found, inline)
        if value is not None:
            raise TlsConfigError(f"{key}: PEM given inline is not supported; put it in a file and set "
                                 f"{key.rsplit('ssl.', 1)[0]}ssl.keystore.location / .truststore.location")
    keystore = _pem_file(found, "keystore")
    if keystore is None:
        raise TlsConfigError(
            "listeners: an https listener needs a key store: set listeners.https.ssl.keystore.location "
            "(or ssl.keystore.location) to a PEM file holding the private key and the certificate chain"
        )
    keystore_key, keystore_path = keystore
    _, key_password = _lookup(found, "ssl.key.password")
    if key_password is None:
        _, key_password = _lookup(found, "ssl.keystore.password")
    truststore = _pem_file(found, "truststore")
    try:
        adapter = BuiltinSSLAdapter(str(keystore_path), str(keystore_path),
                                    certificate_chain=str(truststore[1]) if truststore else None,
                                    private_key_password=key_password)
    except (ssl.SSLError, ValueError, OSError) as e:
        raise TlsConfigError(f"{keystore_key}: cannot load the key and certificate from {keystore_path}: {e}") from None
    context = adapter.context
    auth_key, client_auth = _lookup(found, "ssl.client.auth")
    mode = _CLIENT_AUTH.get((client_auth or "none").lower())
    if mode is None:
        raise TlsConfigError(f"{auth_key}: {client_auth!r} is not one of none, requested, required")
    if mode != ssl.CERT_NONE and truststore is None:
        raise TlsConfigError(f"{auth_key}={client_auth} needs a trust store (ssl.truststore.location) "
                             "holding the CA certificates that client certificates are checked against")
    context.verify_mode = mode
    protocols_key, protocols = _lookup(found, "ssl.enabled.protocols")
    if protocols is not None:
        names = [p.strip() for p in protocols.split(",") if p.strip()]
        unknown = [p for p in names if p not in _PROTOCOLS]
        if unknown or not names:
            raise TlsConfigError(f"{protocols_key}: {protocols!r}; supported protocols are TLSv1.2 and TLSv1.3")
        versions = sorted(_PROTOCOLS[p] for p in names)
        context.minimum_version, context.maximum_version = versions[0], versions[-1]
    ciphers_key, ciphers = _lookup(found, "ssl.cipher.suites")
    if ciphers is not None:
        try:
            context.set_ciphers(":".join(c.strip() for c in ciphers.split(",") if c.strip()))
        except ssl.SSLError:
            raise TlsConfigError(f"{ciphers_key}: {ciphers!r} names no cipher OpenSSL knows "
                                 "(use OpenSSL names, e.g. ECDHE-RSA-AES256-GCM-SHA384)") from None
    return adapter
