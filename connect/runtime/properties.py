"""Reading worker and connector config files: Java ``.properties`` or JSON."""

from __future__ import annotations

import json
from pathlib import Path

from jproperties import ParseError, Properties

from connect.api.errors import ConfigException

__all__ = ["ConfigFileError", "load_config_file", "parse_properties"]

_UTF8_BOM = b"\xef\xbb\xbf"


class ConfigFileError(ConfigException):
    """A config file cannot be read or parsed; the message names the file."""


def parse_properties(text: bytes | str) -> dict[str, str]:
    """Parse Java properties syntax (escapes, continuation lines, ``=``/``:``/space separators, comments)."""
    props = Properties()
    props.load(text.encode("utf-8") if isinstance(text, str) else text, "utf-8")
    return {key: value.data for key, value in props.items()}


def load_config_file(path: str | Path) -> dict[str, str]:
    """Load a config file. JSON files may be ``{"name", "config": {...}}`` (the REST shape) or a flat map."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigFileError(message=f"{path}: cannot read config file: {exc.strerror or exc}") from exc
    if raw.startswith(_UTF8_BOM):
        # Java's Properties.load would read the BOM as part of the first key: refuse rather than guess
        raise ConfigFileError(message=f"{path}: starts with a UTF-8 byte order mark (BOM); save the file as "
                                      "UTF-8 without a BOM")
    if path.suffix.lower() == ".json" or raw.lstrip()[:1] == b"{":
        return _from_json(path, raw)
    try:
        return parse_properties(raw)
    except ParseError as exc:
        # jproperties gives an empty message for a bad \u escape, the only ParseError it raises
        reason = exc.message or "malformed \\uXXXX escape (a \\u needs four hex digits)"
        raise ConfigFileError(message=f"{path}: line {exc.line_number}: cannot parse properties: {reason}") from None
    except UnicodeDecodeError as exc:
        raise ConfigFileError(message=f"{path}: not UTF-8 text (byte {exc.start}): {exc.reason}") from None


def _from_json(path: Path, raw: bytes) -> dict[str, str]:
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise ConfigFileError(message=f"{path}: invalid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigFileError(message=f"{path}: expected a JSON object")
    if isinstance(doc.get("config"), dict):
        config = dict(doc["config"])
        if "name" in doc:
            inner = config.setdefault("name", doc["name"])
            if inner != doc["name"]:
                # REST refuses this too: which of the two names would the connector get?
                raise ConfigFileError(message=f"{path}: connector name in config ({inner}) doesn't match the "
                                              f"connector name ({doc['name']})")
    else:
        config = doc
    out: dict[str, str] = {}
    for key, value in config.items():
        if isinstance(value, dict | list):
            raise ConfigFileError(message=f"{path}: value of {key} must be a string, number or boolean")
        out[str(key)] = _as_config_string(value)
    return out


def _as_config_string(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)
