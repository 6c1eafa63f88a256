"""Typed configuration definitions, parsing and validation (Kafka's ConfigDef).

A ConfigDef describes every key a plugin accepts: its type, default,
validator, importance, documentation and UI grouping. The same definition
parses a plugin's string properties at start-up and feeds the REST validate
endpoint, so users see one set of rules in both places.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from connect.api.errors import ConfigException

__all__ = [
    "NO_DEFAULT",
    "AbstractConfig",
    "CaseInsensitiveValidString",
    "CompositeValidator",
    "ConfigDef",
    "ConfigException",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "FilePath",
    "Importance",
    "LambdaValidator",
    "NonEmptyString",
    "NonNullValidator",
    "Password",
    "Range",
    "Recommender",
    "ValidList",
    "ValidString",
    "Validator",
    "Width",
    "closest_key",
    "parse_type",
]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


class ConfigType(enum.Enum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(enum.Enum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(enum.Enum):
    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


class Password:
    """A secret value; its text form never shows the secret."""

    HIDDEN = "[hidden]"
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return self.HIDDEN

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


_INT_RANGES = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), 2**31 - 1),
    ConfigType.LONG: (-(2**63), 2**63 - 1),
}


def parse_type(name: str, value: Any, type_: ConfigType) -> Any:
    """Parse a raw (usually string) value into ``type_``, or raise ConfigException naming the key."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.strip() if type_ is not ConfigType.PASSWORD else value
    try:
        if type_ is ConfigType.BOOLEAN:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise ConfigException(name, value, "Expected value to be either true or false")
        if type_ is ConfigType.STRING:
            if isinstance(value, str):
                return value
            raise ConfigException(
                name, value, f"Expected value to be a string, but it was a {type(value).__name__}"
            )
        if type_ in _INT_RANGES:
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ConfigException(name, value, f"Not a number of type {type_.value}")
            try:
                number = int(value)
            except ValueError:
                raise ConfigException(name, value, f"Not a number of type {type_.value}") from None
            lo, hi = _INT_RANGES[type_]
            if not lo <= number <= hi:
                raise ConfigException(name, value, f"Not a number of type {type_.value}")
            return number
        if type_ is ConfigType.DOUBLE:
            if isinstance(value, bool):
                raise ConfigException(name, value, "Not a number of type DOUBLE")
            try:
                return float(value)
            except (TypeError, ValueError):
                raise ConfigException(name, value, "Not a number of type DOUBLE") from None
        if type_ is ConfigType.LIST:
            if isinstance(value, list | tuple):
                return [str(v).strip() if isinstance(v, str) else v for v in value]
            if isinstance(value, str):
                return [] if not value else [item.strip() for item in value.split(",")]
            raise ConfigException(name, value, "Expected a comma separated list.")
        if type_ is ConfigType.CLASS:
            if isinstance(value, str | type):
                return value
            raise ConfigException(name, value, "Expected a class name or a class")
        if type_ is ConfigType.PASSWORD:
            if isinstance(value, Password):
                return value
            if isinstance(value, str):
                return Password(value)
            raise ConfigException(name, value, "Expected value to be a string")
    except ConfigException:
        raise
    raise ConfigException(name, value, f"Unknown type {type_}")


def format_value(value: Any, type_: ConfigType) -> str | None:
    """The string form Kafka Connect shows in REST (passwords hidden)."""
    if value is None or value is NO_DEFAULT:
        return None
    if type_ is ConfigType.PASSWORD:
        return Password.HIDDEN
    if type_ is ConfigType.LIST and isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if type_ is ConfigType.BOOLEAN and isinstance(value, bool):
        return "true" if value else "false"
    if type_ is ConfigType.CLASS and isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return str(value)


class Validator:
    """Checks a parsed value; raises ConfigException naming the key on failure."""

    def ensure_valid(self, name: str, value: Any) -> None:
        raise NotImplementedError

    def __str__(self) -> str:
        return ""


@attrs.frozen
class Range(Validator):
    min: float | None = None
    max: float | None = None

    @classmethod
    def at_least(cls, minimum: float) -> Range:
        return cls(minimum, None)

    @classmethod
    def between(cls, minimum: float, maximum: float) -> Range:
        return cls(minimum, maximum)

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise ConfigException(name, value, "Value must be non-null")
        if self.min is not None and value < self.min:
            raise ConfigException(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise ConfigException(name, value, f"Value must be no more than {self.max}")

    def __str__(self) -> str:
        if self.min is None:
            return f"[...,{self.max}]"
        if self.max is None:
            return f"[{self.min},...]"
        return f"[{self.min},...,{self.max}]"


@attrs.frozen
class ValidString(Validator):
    valid: tuple[str, ...]

    @classmethod
    def in_(cls, *valid: str) -> ValidString:
        return cls(tuple(valid))

    def ensure_valid(self, name: str, value: Any) -> None:
        if value not in self.valid:
            raise ConfigException(name, value, f"String must be one of: {', '.join(self.valid)}")

    def __str__(self) -> str:
        return "[" + ", ".join(self.valid) + "]"


@attrs.frozen
class CaseInsensitiveValidString(Validator):
    valid: tuple[str, ...]

    @classmethod
    def in_(cls, *valid: str) -> CaseInsensitiveValidString:
        return cls(tuple(valid))

    def ensure_valid(self, name: str, value: Any) -> None:
        if not isinstance(value, str) or value.upper() not in {v.upper() for v in self.valid}:
            raise ConfigException(
                name, value, f"String must be one of (case insensitive): {', '.join(self.valid)}"
            )

    def __str__(self) -> str:
        return "(case insensitive) [" + ", ".join(self.valid) + "]"


@attrs.frozen
class ValidList(Validator):
    valid: tuple[str, ...]
    allow_empty: bool = True

    @classmethod
    def in_(cls, *valid: str) -> ValidList:
        return cls(tuple(valid))

    def ensure_valid(self, name: str, value: Any) -> None:
        items = value or []
        if not items and not self.allow_empty:
            raise ConfigException(name, value, "List must not be empty")
        for item in items:
            if item not in self.valid:
                raise ConfigException(
                    name,
                    value,
                    f"Invalid value {item} for configuration {name}: String must be one of: {', '.join(self.valid)}",
                )

    def __str__(self) -> str:
        return "[" + ", ".join(self.valid) + "]"


class NonEmptyString(Validator):
    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ConfigException(name, value, "String must be non-empty")

    def __str__(self) -> str:
        return "non-empty string"


class NonNullValidator(Validator):
    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise ConfigException(name, value, "Entry must be non-null")

    def __str__(self) -> str:
        return "non-null string"


@attrs.frozen
class CompositeValidator(Validator):
    validators: tuple[Validator, ...]

    @classmethod
    def of(cls, *validators: Validator) -> CompositeValidator:
        return cls(tuple(validators))

    def ensure_valid(self, name: str, value: Any) -> None:
        for validator in self.validators:
            validator.ensure_valid(name, value)

    def __str__(self) -> str:
        return ", ".join(str(v) for v in self.validators)


@attrs.frozen
class LambdaValidator(Validator):
    """A validator from a function that returns an error message, or None when the value is fine."""

    check: Callable[[str, Any], str | None]
    description: str = ""

    def ensure_valid(self, name: str, value: Any) -> None:
        message = self.check(name, value)
        if message:
            raise ConfigException(name, value, message)

    def __str__(self) -> str:
        return self.description


@attrs.frozen
class FilePath(Validator):
    """Declares a key as a path on the worker's filesystem that the plugin reads or writes.

    The runtime checks such a path before the connector and each of its tasks start: it must
    resolve (symlinks and ``..`` followed) inside the worker's ``connector.allowed.paths`` and
    never inside the worker's own state or Python's import path. This validator itself only
    checks that the value can be a path; null or empty means no file (standard input or output).

    ``url``: the value may also be a Hadoop-style URL (``hdfs://nn:8020/x``, ``file:///x``); only a
    ``file:`` URL or a path without a scheme names a local path, read as Hadoop reads it (everything
    after the authority, ``?`` and ``#`` included). ``under``: the value is a path below the location
    another key names (``topics.dir`` below ``hdfs.url``, say): local only when that one is, and
    checked, default included, as the two joined.
    """

    mode: str = "read"  # "read" or "write": what the plugin does with the file
    url: bool = False
    under: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.mode not in ("read", "write"):
            raise ValueError(f"FilePath mode must be 'read' or 'write', not {self.mode!r}")

    def local_path(self, value: str, base: str | None = None) -> str | None:
        """The local path ``value`` names (``base``: the value of the ``under`` key), or None if it names none."""
        if self.under is not None:
            root = _local_of_url(base or "")
            if not root:
                return None
            return root.rstrip("/") + "/" + value.strip("/")
        return _local_of_url(value) if self.url else value

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None or value == "":
            return
        if not isinstance(value, str):
            raise ConfigException(name, value, "Expected a file path")
        if "\x00" in value:
            raise ConfigException(name, value, "A file path cannot contain a NUL character")

    @staticmethod
    def declared_by(validator: Validator | None) -> FilePath | None:
        """The FilePath a key's validator declares, looking inside composite validators."""
        if isinstance(validator, FilePath):
            return validator
        if isinstance(validator, CompositeValidator):
            for inner in validator.validators:
                found = FilePath.declared_by(inner)
                if found is not None:
                    return found
        return None

    def __str__(self) -> str:
        return f"a file path the plugin {'reads' if self.mode == 'read' else 'writes'}"


def _local_of_url(text: str) -> str | None:
    """The local path of a Hadoop path string, None for another file system's URL.

    Parsed as Hadoop's ``Path`` parses it, not as a URL: a scheme is what precedes a ``:`` that comes before
    any ``/``, and the path is all that follows the authority, so ``file:///a/x?/../../etc`` is ``/etc``
    (a URL parser would stop the path at ``?`` and see ``/a/x``).
    """
    colon, slash = text.find(":"), text.find("/")
    if colon <= 0 or (slash != -1 and slash < colon):
        return text
    if text[:colon].lower() != "file":
        return None
    rest = text[colon + 1:]
    if rest.startswith("//"):
        end = rest.find("/", 2)
        rest = rest[end:] if end != -1 else ""
    return rest or "/"


class Recommender:
    """Suggests valid values and visibility for a key, given the other parsed values."""

    def valid_values(self, name: str, parsed: Mapping[str, Any]) -> list[Any]:
        return []

    def visible(self, name: str, parsed: Mapping[str, Any]) -> bool:
        return True


@attrs.define
class ConfigKey:
    name: str
    type: ConfigType
    default_value: Any = NO_DEFAULT
    validator: Validator | None = None
    importance: Importance = Importance.MEDIUM
    documentation: str = ""
    group: str | None = None
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str | None = None
    dependents: tuple[str, ...] = ()
    recommender: Recommender | None = None
    internal: bool = False

    @property
    def required(self) -> bool:
        return self.default_value is NO_DEFAULT


@attrs.define
class ConfigValue:
    """The validation result of one key, in the shape the REST validate endpoint reports."""

    name: str
    value: Any = None
    recommended_values: list[Any] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    visible: bool = True

    def add_error(self, message: str) -> None:
        self.errors.append(message)


class ConfigDef:
    """An ordered set of ConfigKeys that parses and validates properties."""

    def __init__(self, base: ConfigDef | None = None) -> None:
        self._keys: dict[str, ConfigKey] = dict(base._keys) if base is not None else {}
        self._groups: list[str] = list(base._groups) if base is not None else []
        self._prefixes: dict[str, str] = dict(base._prefixes) if base is not None else {}

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM,
        documentation: str = "",
        group: str | None = None,
        order_in_group: int = -1,
        width: Width = Width.NONE,
        display_name: str | None = None,
        dependents: Sequence[str] = (),
        recommender: Recommender | None = None,
        internal: bool = False,
    ) -> ConfigDef:
        if name in self._keys:
            raise ConfigException(message=f"Configuration {name} is defined twice.")
        if default is not NO_DEFAULT and default is not None:
            default = parse_type(name, default, type)
            if validator is not None:
                validator.ensure_valid(name, default)
        if group is not None and group not in self._groups:
            self._groups.append(group)
        self._keys[name] = ConfigKey(
            name,
            type,
            default,
            validator,
            importance,
            documentation,
            group,
            order_in_group,
            width,
            display_name or name,
            tuple(dependents),
            recommender,
            internal,
        )
        return self

    def define_internal(self, name: str, type: ConfigType, default: Any = NO_DEFAULT) -> ConfigDef:
        return self.define(name, type, default, importance=Importance.LOW, internal=True)

    @property
    def config_keys(self) -> Mapping[str, ConfigKey]:
        return self._keys

    @property
    def groups(self) -> list[str]:
        return list(self._groups)

    def names(self) -> list[str]:
        return list(self._keys)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def allow_prefix(self, prefix: str, documentation: str = "") -> ConfigDef:
        """Know every key under ``prefix`` (ending with ``.``) without defining it: a family of settings handed
        on as they are, such as a client's ``producer.*`` or a Spark session's ``spark.*``. Such keys are
        neither parsed nor validated here; they are only not reported as unknown."""
        self._prefixes[prefix] = documentation
        return self

    @property
    def prefixes(self) -> Mapping[str, str]:
        """The allowed key prefixes, with what each family is."""
        return self._prefixes

    def knows(self, name: str) -> bool:
        """Whether ``name`` is a defined key or lies in an allowed family."""
        return name in self._keys or any(name.startswith(p) and len(name) > len(p) for p in self._prefixes)

    def unknown_keys(self, props: Iterable[str]) -> list[str]:
        """The keys of ``props`` this definition does not know, in their order (Kafka's ``unused``, as
        far as a definition can tell)."""
        return [name for name in props if not self.knows(name)]

    def embed(self, prefix: str, group: str, start_order: int, child: ConfigDef) -> ConfigDef:
        """Add every key of ``child`` under ``prefix`` (how transform configs join a connector's)."""
        order = start_order
        for key in child._keys.values():
            order += 1
            self.define(
                prefix + key.name,
                key.type,
                key.default_value,
                key.validator,
                key.importance,
                key.documentation,
                group,
                order,
                key.width,
                key.display_name,
                tuple(prefix + d for d in key.dependents),
                key.recommender,
                key.internal,
            )
        for family, documentation in child._prefixes.items():
            self.allow_prefix(prefix + family, documentation)
        return self

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Parse every defined key; raise ConfigException for the first missing or invalid one."""
        values: dict[str, Any] = {}
        for key in self._keys.values():
            values[key.name] = self._parse_key(key, props)
        return values

    def _parse_key(self, key: ConfigKey, props: Mapping[str, Any]) -> Any:
        if key.name in props:
            value = parse_type(key.name, props[key.name], key.type)
        elif key.required:
            raise ConfigException(
                key.name, None, f'Missing required configuration "{key.name}" which has no default value.'
            )
        else:
            value = key.default_value
        if key.validator is not None and (key.name in props or value is not None):
            key.validator.ensure_valid(key.name, value)
        return value

    def validate(self, props: Mapping[str, Any]) -> dict[str, ConfigValue]:
        """Validate every key, collecting all errors instead of stopping at the first."""
        results: dict[str, ConfigValue] = {}
        parsed: dict[str, Any] = {}
        for key in self._keys.values():
            cv = ConfigValue(key.name)
            raw = props.get(key.name)
            cv.value = (
                raw if key.name in props else (None if key.default_value is NO_DEFAULT else key.default_value)
            )
            try:
                parsed[key.name] = self._parse_key(key, props)
                cv.value = parsed[key.name]
            except ConfigException as exc:
                cv.add_error(_error_text(exc))
            results[key.name] = cv
        for key in self._keys.values():
            if key.recommender is not None:
                cv = results[key.name]
                try:
                    cv.recommended_values = list(key.recommender.valid_values(key.name, parsed))
                    cv.visible = key.recommender.visible(key.name, parsed)
                except ConfigException as exc:
                    cv.add_error(_error_text(exc))
        return results


# How alike (difflib's ratio) a supplied key and a known one must be for the one to be taken for a misspelling
# of the other: "fiel"/"file" is 0.75, "listners"/"listeners" 0.94; unrelated names of similar length stay
# below 0.5.
_CLOSE = 0.7


def closest_key(name: str, known: Iterable[str], prefixes: Iterable[str] = ()) -> str | None:
    """The known key ``name`` was probably meant to be, or None when none is close.

    ``known``: the defined keys; ``prefixes``: the allowed families (``producer.``), so that a misspelt family
    (``prodcuer.acks``) suggests the same key under the family it is closest to (``producer.acks``).
    """
    candidates = {k.lower(): k for k in known}
    best: str | None = None
    best_ratio = 0.0
    lowered = name.lower()  # a key spelt with capitals is still the key it spells
    for match in difflib.get_close_matches(lowered, candidates, n=1, cutoff=_CLOSE):
        best, best_ratio = candidates[match], difflib.SequenceMatcher(None, lowered, match).ratio()
    parts = name.split(".")
    for prefix in prefixes:
        depth = prefix.count(".")
        if len(parts) <= depth:
            continue
        head = ".".join(parts[:depth]) + "."
        ratio = difflib.SequenceMatcher(None, head.lower(), prefix.lower()).ratio()
        if head != prefix and ratio >= _CLOSE and ratio > best_ratio:
            best, best_ratio = prefix + ".".join(parts[depth:]), ratio
    return best


def _error_text(exc: ConfigException) -> str:
    if exc.name is not None and exc.reason and exc.reason.startswith("Missing required configuration"):
        return exc.reason
    return str(exc)


class AbstractConfig:
    """Parsed configuration for one plugin, keeping the original properties too."""

    def __init__(self, definition: ConfigDef, originals: Mapping[str, Any]) -> None:
        self.definition = definition
        self.originals: dict[str, Any] = dict(originals)
        self.values: dict[str, Any] = definition.parse(originals)

    def get(self, name: str) -> Any:
        if name not in self.values:
            raise ConfigException(message=f"Unknown configuration '{name}'")
        return self.values[name]

    def get_string(self, name: str) -> str | None:
        return self.get(name)

    def get_int(self, name: str) -> int | None:
        return self.get(name)

    def get_long(self, name: str) -> int | None:
        return self.get(name)

    def get_double(self, name: str) -> float | None:
        return self.get(name)

    def get_boolean(self, name: str) -> bool | None:
        return self.get(name)

    def get_list(self, name: str) -> list[str]:
        return self.get(name) or []

    def get_password(self, name: str) -> Password | None:
        return self.get(name)

    def originals_with_prefix(self, prefix: str, strip: bool = True) -> dict[str, Any]:
        return {
            (k[len(prefix) :] if strip else k): v for k, v in self.originals.items() if k.startswith(prefix)
        }

    def unused(self) -> set[str]:
        return set(self.originals) - set(self.values)
