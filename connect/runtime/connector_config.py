"""Connector configuration: the keys every connector has, enriched with its plugin's own.

``ConnectorConfigValidator`` is the one place that decides whether a
connector config is acceptable: the standalone CLI uses it before anything
runs and the REST validate/create endpoints use it for their 400s and
ConfigInfos bodies. Every class name in a config (connector, converters,
transforms, predicates) must name a registered plugin, and every file path a
plugin declares must pass the worker's FilePathPolicy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from connect.api.config import (
    CompositeValidator,
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
    ValidString,
    Width,
    format_value,
)
from connect.api.connector import Connector
from connect.api.errors import ConfigException
from connect.runtime.file_paths import FilePathPolicy
from connect.runtime.plugins import PluginRegistry, connector_type

__all__ = ["ConnectorConfigValidator", "ValidationResult", "base_connector_def", "sink_connector_def",
           "source_connector_def"]

COMMON_GROUP = "Common"
TRANSFORMS_GROUP = "Transforms"
PREDICATES_GROUP = "Predicates"
ERROR_GROUP = "Error Handling"
TOPIC_CREATION_GROUP = "Topic Creation"


def _unique_aliases(name: str, value: Any) -> str | None:
    if value and len(set(value)) != len(value):
        return "Duplicate alias provided."
    return None


# Kafka Connect refuses names with a character for which Java's Character.isISOControl is true; a "/"
# would make the connector unaddressable over REST (and an encoded one is refused there).
_NAME_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f/]")


def _connector_name(name: str, value: Any) -> str | None:
    bad = _NAME_FORBIDDEN.search(value) if isinstance(value, str) else None
    if bad is None:
        return None
    if bad.group() == "/":
        return "Connector name must not contain '/'"
    return f"Connector name must not contain ISO control characters (found U+{ord(bad.group()):04X})"


def base_connector_def() -> ConfigDef:
    d = ConfigDef()
    d.define("name", ConfigType.STRING,
             validator=CompositeValidator.of(NonEmptyString(), LambdaValidator(_connector_name, "no control chars or /")),
             importance=Importance.HIGH,
             documentation="Globally unique name to use for this connector.", group=COMMON_GROUP,
             order_in_group=1, width=Width.MEDIUM, display_name="Connector name")
    d.define("connector.class", ConfigType.STRING, importance=Importance.HIGH,
             documentation="Name or alias of the class for this connector.", group=COMMON_GROUP,
             order_in_group=2, width=Width.LONG, display_name="Connector class")
    d.define("tasks.max", ConfigType.INT, 1, Range.at_least(1), Importance.HIGH,
             "Maximum number of tasks to use for this connector.", COMMON_GROUP, 3, Width.SHORT, "Tasks max")
    d.define("tasks.max.enforce", ConfigType.BOOLEAN, True, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=4)
    d.define("key.converter", ConfigType.CLASS, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=5, documentation="Converter for keys; overrides the worker's.")
    d.define("value.converter", ConfigType.CLASS, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=6, documentation="Converter for values; overrides the worker's.")
    d.define("header.converter", ConfigType.CLASS, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=7, documentation="HeaderConverter; overrides the worker's.")
    d.define("config.action.reload", ConfigType.STRING, "restart", ValidString.in_("none", "restart"),
             Importance.LOW, group=COMMON_GROUP, order_in_group=8)
    d.define("transforms", ConfigType.LIST, [], LambdaValidator(_unique_aliases), Importance.LOW,
             "Aliases for the transformations to be applied to records.", TRANSFORMS_GROUP, 1, Width.LONG,
             "Transforms")
    d.define("predicates", ConfigType.LIST, [], LambdaValidator(_unique_aliases), Importance.LOW,
             "Aliases for the predicates used by transformations.", PREDICATES_GROUP, 1, Width.LONG,
             "Predicates")
    d.define("errors.retry.timeout", ConfigType.LONG, 0, importance=Importance.MEDIUM, group=ERROR_GROUP,
             order_in_group=1, documentation="Total time a failed operation is retried, ms; -1 forever.")
    d.define("errors.retry.delay.max.ms", ConfigType.LONG, 60000, Range.at_least(1), Importance.MEDIUM,
             "Maximum delay between consecutive retries, ms.", ERROR_GROUP, 2)
    d.define("errors.tolerance", ConfigType.STRING, "none", ValidString.in_("none", "all"), Importance.MEDIUM,
             "none: an error fails the task; all: problematic records are skipped.", ERROR_GROUP, 3)
    d.define("errors.log.enable", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM, group=ERROR_GROUP,
             order_in_group=4)
    d.define("errors.log.include.messages", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
             group=ERROR_GROUP, order_in_group=5)
    return d


def sink_connector_def() -> ConfigDef:
    d = base_connector_def()
    d.define("topics", ConfigType.LIST, [], importance=Importance.HIGH, group=COMMON_GROUP, order_in_group=4,
             documentation="Topics to consume; use this or topics.regex.")
    d.define("topics.regex", ConfigType.STRING, "", importance=Importance.HIGH, group=COMMON_GROUP,
             order_in_group=4, documentation="Regular expression of topics to consume; use this or topics.")
    d.define("errors.deadletterqueue.topic.name", ConfigType.STRING, "", importance=Importance.MEDIUM,
             group=ERROR_GROUP, order_in_group=6, documentation="Topic for records that fail; empty: no DLQ.")
    d.define("errors.deadletterqueue.topic.replication.factor", ConfigType.SHORT, 3,
             importance=Importance.MEDIUM, group=ERROR_GROUP, order_in_group=7)
    d.define("errors.deadletterqueue.context.headers.enable", ConfigType.BOOLEAN, False,
             importance=Importance.MEDIUM, group=ERROR_GROUP, order_in_group=8)
    return d


def source_connector_def() -> ConfigDef:
    d = base_connector_def()
    d.define("topic.creation.groups", ConfigType.LIST, [], importance=Importance.LOW,
             group=TOPIC_CREATION_GROUP, order_in_group=1)
    d.define("exactly.once.support", ConfigType.STRING, "requested", ValidString.in_("requested", "required"),
             Importance.MEDIUM, group=COMMON_GROUP, order_in_group=9)
    d.define("transaction.boundary", ConfigType.STRING, "poll", ValidString.in_("poll", "interval", "connector"),
             Importance.MEDIUM, group=COMMON_GROUP, order_in_group=10)
    d.define("offsets.storage.topic", ConfigType.STRING, None, importance=Importance.LOW, group=COMMON_GROUP,
             order_in_group=11)
    # Headrace extension: a dead-letter topic for source records that fail conversion or a transform
    d.define("errors.deadletterqueue.topic.name", ConfigType.STRING, "", importance=Importance.MEDIUM,
             group=ERROR_GROUP, order_in_group=6, documentation="Topic for records that fail; empty: no DLQ.")
    d.define("errors.deadletterqueue.topic.replication.factor", ConfigType.SHORT, 3,
             importance=Importance.MEDIUM, group=ERROR_GROUP, order_in_group=7)
    d.define("errors.deadletterqueue.context.headers.enable", ConfigType.BOOLEAN, False,
             importance=Importance.MEDIUM, group=ERROR_GROUP, order_in_group=8)
    return d


@attrs.define
class ValidationResult:
    """All keys checked, with the definitions they were checked against."""

    name: str | None
    definition: ConfigDef
    values: dict[str, ConfigValue]
    connector_class: type[Connector] | None

    @property
    def errors(self) -> list[tuple[str, str]]:
        return [(name, err) for name, cv in self.values.items() for err in cv.errors]

    @property
    def error_count(self) -> int:
        return sum(len(cv.errors) for cv in self.values.values())

    def error_message(self) -> str:
        errs = self.errors
        lines = "\n".join(f"{err}" if err.startswith(("Invalid value", "Missing")) else f"{name}: {err}"
                          for name, err in errs)
        return (f"Connector configuration is invalid and contains the following {len(errs)} error(s):\n{lines}\n"
                "You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")

    def raise_if_invalid(self) -> None:
        if self.error_count:
            name, err = self.errors[0]
            raise ConfigException(name, None, err)

    def to_config_infos(self) -> dict[str, Any]:
        """The body of PUT /connector-plugins/{type}/config/validate."""
        configs = []
        for key in self.definition.config_keys.values():
            if key.internal:
                continue
            cv = self.values.get(key.name, ConfigValue(key.name))
            configs.append({"definition": key_definition(key), "value": _value_json(key, cv)})
        # keys the user gave that no definition covers are reported too, like Kafka does
        for name, cv in self.values.items():
            if name not in self.definition.config_keys:
                configs.append({"definition": None, "value": _value_json(None, cv)})
        return {
            "name": self.name or "",
            "error_count": self.error_count,
            "groups": self.definition.groups,
            "configs": configs,
        }


def key_definition(key: ConfigKey) -> dict[str, Any]:
    return {
        "name": key.name,
        "type": key.type.value,
        "required": key.required,
        "default_value": None if key.required else format_value(key.default_value, key.type),
        "importance": key.importance.value,
        "documentation": key.documentation,
        "group": key.group,
        "width": key.width.value,
        "display_name": key.display_name or key.name,
        "dependents": list(key.dependents),
        "order": key.order_in_group,
    }


def _value_json(key: ConfigKey | None, cv: ConfigValue) -> dict[str, Any]:
    value = format_value(cv.value, key.type) if key is not None else (None if cv.value is None else str(cv.value))
    return {
        "name": cv.name,
        "value": value,
        "recommended_values": [str(v) for v in cv.recommended_values],
        "errors": list(cv.errors),
        "visible": cv.visible,
    }


class ConnectorConfigValidator:
    """Validates a connector config against the framework's keys and its plugins' ConfigDefs.

    ``file_paths`` is the worker's policy for the file paths plugins declare; without one only
    Python's import path is protected (the CLI and the herders pass the worker's).
    """

    def __init__(self, plugins: PluginRegistry, file_paths: FilePathPolicy | None = None) -> None:
        self.plugins = plugins
        self.file_paths = file_paths if file_paths is not None else FilePathPolicy()

    def validate(self, props: Mapping[str, str]) -> ValidationResult:
        name = props.get("name")
        class_name = props.get("connector.class")
        connector_cls: type[Connector] | None = None
        class_error: str | None = None
        if class_name:
            try:
                connector_cls = self.plugins.resolve(class_name, ("source", "sink"), "connector.class")  # type: ignore[assignment]
            except ConfigException as exc:
                class_error = str(exc)
        kind = connector_type(connector_cls) if connector_cls is not None else None
        definition = {"sink": sink_connector_def, "source": source_connector_def}.get(kind or "", base_connector_def)()
        definition = self._enrich(definition, props)
        values = definition.validate(props)
        if class_error:
            values["connector.class"].add_error(class_error)
        self._check_converters(props, values)
        if kind == "sink":
            self._check_sink_topics(props, values)
        if connector_cls is not None:
            self._merge_plugin(definition, values, connector_cls, props)
        for error in self.file_paths.check(definition, props):
            cv = values.setdefault(str(error.name), ConfigValue(str(error.name), props.get(str(error.name))))
            cv.add_error(str(error))
        return ValidationResult(name, definition, values, connector_cls)

    def check_task_paths(self, connector_config: Mapping[str, str], task_config: Mapping[str, str]) -> None:
        """Check again, just before a task starts, the file paths declared by the connector and its transforms.

        Raises ConfigException naming the first refused key: a path valid when the config was submitted
        may resolve elsewhere now (a symlink swapped in, a config provider's value).
        """
        class_name = connector_config.get("connector.class", "")
        connector_cls = self.plugins.resolve(class_name, ("source", "sink"), "connector.class")
        try:
            plugin_def: ConfigDef = connector_cls().config()  # type: ignore[attr-defined]
        except Exception as exc:
            raise ConfigException("connector.class", class_name,
                                  f"could not read the connector's config definition: {exc}") from exc
        definition = self._enrich(ConfigDef(plugin_def), connector_config)
        for config in (connector_config, task_config):
            errors = self.file_paths.check(definition, config)
            if errors:
                raise errors[0]

    def _check_converters(self, props: Mapping[str, str], values: dict[str, ConfigValue]) -> None:
        for key, kind in (("key.converter", "converter"), ("value.converter", "converter"),
                          ("header.converter", "header_converter")):
            name = props.get(key)
            if name and str(name).strip() and not values[key].errors:
                try:
                    self.plugins.resolve(str(name), kind, key)
                except ConfigException as exc:
                    values[key].add_error(str(exc))

    def _enrich(self, definition: ConfigDef, props: Mapping[str, str]) -> ConfigDef:
        """Add ``transforms.<alias>.*`` and ``predicates.<alias>.*`` keys, each plugin's own embedded."""
        enriched = ConfigDef(definition)
        predicates = _aliases(props.get("predicates", ""))
        for order, alias in enumerate(_aliases(props.get("transforms", "")), start=2):
            prefix = f"transforms.{alias}."
            enriched.define(prefix + "type", ConfigType.CLASS, importance=Importance.HIGH, group=f"Transforms: {alias}",
                            order_in_group=order, documentation="Class for the transformation.",
                            validator=self._class_validator("transformation"))
            enriched.define(prefix + "negate", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
                            group=f"Transforms: {alias}", documentation="Negate the predicate's result.")
            enriched.define(
                prefix + "predicate", ConfigType.STRING, None, importance=Importance.MEDIUM,
                group=f"Transforms: {alias}", documentation="Alias of a predicate gating this transform.",
                validator=LambdaValidator(
                    lambda key, value, _p=tuple(predicates): None if value in (None, "") or value in _p
                    else f"Predicate {value} is not listed in predicates"
                ),
            )
            self._embed_plugin(enriched, props, prefix, "transformation", f"Transforms: {alias}")
        for alias in predicates:
            prefix = f"predicates.{alias}."
            enriched.define(prefix + "type", ConfigType.CLASS, importance=Importance.HIGH, group=f"Predicates: {alias}",
                            documentation="Class for the predicate.", validator=self._class_validator("predicate"))
            self._embed_plugin(enriched, props, prefix, "predicate", f"Predicates: {alias}")
        return enriched

    def _class_validator(self, kind: str) -> LambdaValidator:
        def check(key: str, value: Any) -> str | None:
            try:
                self.plugins.resolve(str(value), kind, key)
            except ConfigException as exc:
                return exc.reason or str(exc)
            return None

        return LambdaValidator(check, f"a {kind} class")

    def _embed_plugin(self, definition: ConfigDef, props: Mapping[str, str], prefix: str, kind: str, group: str) -> None:
        class_name = props.get(prefix + "type")
        if not class_name:
            return
        try:
            plugin = self.plugins.new_instance(class_name, kind, prefix + "type")
            child: ConfigDef = plugin.config()  # type: ignore[attr-defined]
        except ConfigException:
            return  # reported when the type key itself is validated below
        for key in child.config_keys.values():
            if prefix + key.name not in definition:
                definition.define(prefix + key.name, key.type, key.default_value, key.validator, key.importance,
                                  key.documentation, group, key.order_in_group, key.width, key.display_name)

    def _check_sink_topics(self, props: Mapping[str, str], values: dict[str, ConfigValue]) -> None:
        topics = [t.strip() for t in props.get("topics", "").split(",") if t.strip()]
        regex = props.get("topics.regex", "").strip()
        if topics and regex:
            msg = "topics and topics.regex are mutually exclusive options, but both are set."
            values["topics"].add_error(msg)
            values["topics.regex"].add_error(msg)
        elif not topics and not regex:
            msg = "Must configure one of topics or topics.regex"
            values["topics"].add_error(msg)
            values["topics.regex"].add_error(msg)
        if regex:
            try:
                re.compile(regex)
            except re.error as exc:
                values["topics.regex"].add_error(f"Invalid value {regex} for configuration topics.regex: {exc}")
        dlq = props.get("errors.deadletterqueue.topic.name", "").strip()
        if dlq and (dlq in topics or (regex and re.fullmatch(regex, dlq))):
            values["errors.deadletterqueue.topic.name"].add_error(
                f"The DLQ topic '{dlq}' may not be included in the list of topics to consume"
            )

    def _merge_plugin(self, definition: ConfigDef, values: dict[str, ConfigValue], cls: type[Connector],
                      props: Mapping[str, str]) -> None:
        try:
            connector = cls()
            plugin_def = connector.config()
            plugin_values = connector.validate(dict(props))
        except Exception as exc:
            values["connector.class"].add_error(f"{cls.__qualname__} could not validate its config: {exc}")
            return
        for key in plugin_def.config_keys.values():
            if key.name not in definition:
                definition.define(key.name, key.type, key.default_value, key.validator, key.importance,
                                  key.documentation, key.group, key.order_in_group, key.width, key.display_name,
                                  key.dependents, key.recommender, key.internal)
        for name, cv in plugin_values.items():
            existing = values.get(name)
            if existing is None:
                values[name] = cv
            else:
                existing.errors.extend(e for e in cv.errors if e not in existing.errors)


def _aliases(raw: str | None) -> list[str]:
    return [a.strip() for a in (raw or "").split(",") if a.strip()]


def password_keys(definition: ConfigDef) -> set[str]:
    return {k.name for k in definition.config_keys.values() if k.type is ConfigType.PASSWORD}
