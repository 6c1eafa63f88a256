"""PASSWORD values encrypted at rest in the config topic, with a key only the worker holds.

A PASSWORD value is stored as ``[encrypted:fernet]<token>``: a Fernet token
(AES-128-CBC with an HMAC-SHA256, from the ``cryptography`` package) of the
UTF-8 value. The key is the worker setting ``config.storage.encryption.key``
(a Fernet key: 32 bytes, URL-safe base64) or the content of
``config.storage.encryption.key.file``. With neither, a key is generated on
first start into an owner-only (0600) file beside the offsets file, so
passwords are never stored in clear; that file must then be kept with the
worker's state (backups included) or the stored passwords cannot be read.
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from connect.api.errors import ConfigException, ConnectException

__all__ = ["ENCRYPTED_PREFIX", "ConfigEncryption", "DecryptionError", "default_key_file"]

log = logging.getLogger(__name__)

ENCRYPTED_PREFIX = "[encrypted:fernet]"


class DecryptionError(ConnectException):
    """A stored value cannot be decrypted with this worker's key."""


def default_key_file(offsets_file: str | Path) -> Path:
    offsets = Path(offsets_file)
    return offsets.with_name(offsets.name + ".config-key")


if TYPE_CHECKING:
    from cryptography.fernet import Fernet


class ConfigEncryption:
    def __init__(self, key: bytes | str) -> None:
        # checked here as Fernet checks it, so that a bad key stops the worker as it starts; cryptography itself
        # is imported with the first PASSWORD value to encrypt or decrypt (most workers have none; a twentieth
        # of a CPU-second of every start)
        try:
            if len(base64.urlsafe_b64decode(key)) != 32:
                raise ValueError("not 32 bytes")
        except (ValueError, TypeError):
            raise ConfigException("config.storage.encryption.key", None,
                                  "not a Fernet key (32 bytes, URL-safe base64, 44 characters)") from None
        self._key = key
        self._fernet_instance: Fernet | None = None

    @property
    def _fernet(self) -> Fernet:
        if self._fernet_instance is None:
            from cryptography.fernet import Fernet

            self._fernet_instance = Fernet(self._key)
        return self._fernet_instance

    @classmethod
    def from_worker_config(cls, config: Mapping[str, object], offsets_file: str | Path) -> ConfigEncryption:
        """The worker's key: given inline, read from a file, or generated into an owner-only file."""
        inline = config.get("config.storage.encryption.key")
        if inline is not None and str(inline).strip():
            return cls(str(inline).strip())
        named = config.get("config.storage.encryption.key.file")
        path = Path(str(named)) if named else default_key_file(offsets_file)
        if not path.exists():
            if named:
                raise ConfigException("config.storage.encryption.key.file", str(path), "no such file")
            _create_key_file(path)
            log.info("Generated the config encryption key %s (owner-only); keep it with the worker's state", path)
        elif path.stat().st_mode & 0o077:
            log.warning("Config encryption key file %s is readable by others (mode %o); chmod 600 it", path,
                        path.stat().st_mode & 0o777)
        try:
            key = path.read_bytes().strip()
        except OSError as exc:
            raise ConfigException("config.storage.encryption.key.file", str(path),
                                  f"cannot read: {exc.strerror}") from None
        try:
            return cls(key)
        except ConfigException:
            raise ConfigException("config.storage.encryption.key.file", str(path),
                                  "does not hold a Fernet key (32 bytes, URL-safe base64)") from None

    @staticmethod
    def is_encrypted(value: object) -> bool:
        return isinstance(value, str) and value.startswith(ENCRYPTED_PREFIX)

    def encrypt(self, value: str) -> str:
        return ENCRYPTED_PREFIX + self._fernet.encrypt(value.encode("utf-8")).decode("ascii")

    def decrypt(self, value: str) -> str:
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(value[len(ENCRYPTED_PREFIX):].encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            raise DecryptionError("cannot decrypt with this worker's config.storage.encryption key; was it "
                                  "written with another key?") from None

    def encrypt_values(self, config: Mapping[str, str], keys: Iterable[str]) -> dict[str, str]:
        """``config`` with the non-empty values of ``keys`` encrypted."""
        out = dict(config)
        for key in keys:
            value = out.get(key)
            if value:
                out[key] = self.encrypt(value)
        return out

    def decrypt_values(self, config: Mapping[str, str], where: str) -> dict[str, str]:
        out = dict(config)
        for key, value in config.items():
            if self.is_encrypted(value):
                try:
                    out[key] = self.decrypt(value)
                except DecryptionError as exc:
                    raise DecryptionError(f"{where}, key {key}: {exc}") from None
        return out


def _create_key_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(base64.urlsafe_b64encode(os.urandom(32)) + b"\n")  # as Fernet.generate_key()
        fh.flush()
        os.fsync(fh.fileno())
