"""Whether a connector config is acceptable, and the ConfigInfos that say why not.

``ConnectorConfigValidator`` is the one place that decides it: the standalone
CLI uses it before anything runs, the REST validate/create endpoints for
their 400s and ConfigInfos bodies, and the Worker again before a task starts
(file paths). It checks a config against the same definitions the runtime
parses it with (connector_config.py), enriched with the transforms',
predicates' and connector's own keys. Every class name in a config
(connector, converters, transforms, predicates) must name a registered
plugin, every file path a plugin declares must pass the worker's
FilePathPolicy, every client override key the worker's
``connector.client.config.override.policy`` and every ``spark.*`` key its
``spark.conf.override.policy``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import attrs

from connect.api.config import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    LambdaValidator,
    closest_key,
    format_value,
)
from connect.api.connector import Connector
from connect.api.errors import ConfigException
from connect.runtime.client_config_policy import ClientConfigOverridePolicy, override_policy
from connect.runtime.connector_config import config_class_for, listed
from connect.runtime.exactly_once_validation import check_exactly_once
from connect.runtime.file_paths import FilePathPolicy
from connect.runtime.plugins import PluginRegistry, connector_type
from connect.runtime.spark_config_policy import SparkConfigOverridePolicy, spark_override_policy
from connect.runtime.worker_config import WorkerConfig, unknown_key_warning

__all__ = ["ConnectorConfigValidator", "ValidationResult", "key_definition"]


@attrs.define
class ValidationResult:
    """All keys checked, with the definitions they were checked against.

    ``connector_type`` is the ``connector.class`` as the config gave it (an alias or a class name): Kafka Connect
    names the ConfigInfos after it, not after the connector.
    """

    connector_type: str | None
    definition: ConfigDef
    values: dict[str, ConfigValue]
    connector_class: type[Connector] | None
    # one line per supplied key no definition knows; accepted all the same, as Kafka Connect accepts them
    warnings: list[str] = attrs.field(factory=list)

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

    def to_config_infos(self) -> dict[str, Any]:
        """The body of PUT /connector-plugins/{type}/config/validate."""
        configs: list[dict[str, Any]] = []
        for key in self.definition.config_keys.values():
            if key.internal:
                continue
            cv = self.values.get(key.name, ConfigValue(key.name))
            configs.append({"definition": key_definition(key), "value": _value_json(key, cv)})
        # keys the user gave that no definition covers are reported too, like Kafka does
        for name, cv in self.values.items():
            if name not in self.definition.config_keys:
                configs.append({"definition": None, "value": _value_json(None, cv)})
        infos: dict[str, Any] = {
            "name": self.connector_type or "",
            "error_count": self.error_count,
            "groups": self.definition.groups,
            "configs": configs,
        }
        # Kafka Connect's answer has no place for a warning: a field of its own, only when there is one, leaves
        # that answer as it is for every client that does not know it
        if self.warnings:
            infos["warnings"] = list(self.warnings)
        return infos


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

    ``file_paths`` is the worker's policy for the file paths plugins declare (without one only Python's
    import path is protected), ``override_policy`` its client config override policy (without one
    ``All``, Kafka Connect's default) and ``spark_policy`` its Spark config override policy (without one
    ``Tuning``, the worker's default); ``for_worker`` takes them from a worker config.
    """

    def __init__(self, plugins: PluginRegistry, file_paths: FilePathPolicy | None = None,
                 override_policy: ClientConfigOverridePolicy | None = None, *,
                 exactly_once_source: bool = False, spark_policy: SparkConfigOverridePolicy | None = None) -> None:
        self.plugins = plugins
        self.file_paths = file_paths if file_paths is not None else FilePathPolicy()
        self.override_policy = override_policy if override_policy is not None else _ALL
        self.spark_policy = spark_policy if spark_policy is not None else _TUNING
        self.exactly_once_source = exactly_once_source

    @classmethod
    def for_worker(cls, plugins: PluginRegistry, worker_config: WorkerConfig | None) -> ConnectorConfigValidator:
        """The validator with the policies ``worker_config`` sets (the defaults without one)."""
        if worker_config is None:
            return cls(plugins, FilePathPolicy.for_worker(None))
        return cls(plugins, FilePathPolicy.for_worker(worker_config), worker_config.client_config_override_policy,
                   exactly_once_source=worker_config.exactly_once_source_enabled,
                   spark_policy=worker_config.spark_config_override_policy)

    def validate(self, props: Mapping[str, str]) -> ValidationResult:
        class_name = props.get("connector.class")
        connector_cls: type[Connector] | None = None
        class_error: str | None = None
        if class_name:
            try:
                connector_cls = self.plugins.resolve(class_name, ("source", "sink"), "connector.class")  # type: ignore[assignment]
            except ConfigException as exc:
                class_error = str(exc)
        kind = connector_type(connector_cls) if connector_cls is not None else None
        definition = self._enrich(config_class_for(kind).definition_for(props), props)
        values = definition.validate(props)
        if class_error:
            values["connector.class"].add_error(class_error)
        self._check_converters(props, values)
        if kind == "sink":
            self._check_sink_topics(props, values)
        merged = connector_cls is not None and self._merge_plugin(definition, values, connector_cls, props)
        if connector_cls is not None and kind == "source":
            check_exactly_once(connector_cls, props, values, self.exactly_once_source)
        for error in self.file_paths.check(definition, props):
            _add_error(values, str(error.name), props, str(error))
        for key, message in self.override_policy.refusals(props):
            _add_error(values, key, props, message)
        for key, message in self.spark_policy.refusals(props):
            _add_error(values, key, props, message)
        # without the connector's own definition its keys would all be unknown: connector.class has the error then
        warnings = _unknown_key_warnings(definition, props, class_name) if merged else []
        return ValidationResult(class_name, definition, values, connector_cls, warnings)

    def unknown_key_warnings(self, props: Mapping[str, str]) -> list[str]:
        """``validate(props).warnings`` without validating: only the definitions are built, so nothing of the
        connector runs (its ``validate`` may reach out to a service). [] when the connector class is unknown."""
        class_name = props.get("connector.class")
        try:
            connector_cls = self.plugins.resolve(str(class_name or ""), ("source", "sink"), "connector.class")
            plugin_def: ConfigDef = connector_cls().config()  # type: ignore[attr-defined]
        except Exception:
            return []  # validation says what is wrong with the class
        definition = self._enrich(config_class_for(connector_type(connector_cls)).definition_for(props), props)
        _merge_definition(definition, plugin_def)
        return _unknown_key_warnings(definition, props, class_name)

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
            # The installed converters are the recommended values, as Kafka Connect lists them.
            values[key].recommended_values = sorted({p.listed_name for p in self.plugins.plugins([kind])})
            name = props.get(key)
            if name and str(name).strip() and not values[key].errors:
                try:
                    self.plugins.resolve(str(name), kind, key)
                except ConfigException as exc:
                    values[key].add_error(str(exc))

    def _enrich(self, definition: ConfigDef, props: Mapping[str, str]) -> ConfigDef:
        """Add ``transforms.<alias>.*`` and ``predicates.<alias>.*`` keys, each plugin's own embedded."""
        enriched = ConfigDef(definition)
        predicates = listed(props, "predicates")
        for order, alias in enumerate(listed(props, "transforms"), start=2):
            prefix = f"transforms.{alias}."
            enriched.define(prefix + "type", ConfigType.CLASS, importance=Importance.HIGH, group=f"Transforms: {alias}",
                            order_in_group=order, documentation="Class for the transformation.",
                            validator=self._class_validator("transformation"))
            enriched.define(prefix + "negate", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
                            group=f"Transforms: {alias}", documentation="Negate the predicate's result.")
            enriched.define(
                prefix + "predicate", ConfigType.STRING, None, importance=Importance.MEDIUM,
                group=f"Transforms: {alias}", documentation="Alias of a predicate gating this transform.",
                validator=LambdaValidator(functools.partial(_listed_predicate, tuple(predicates))),
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
            definition.allow_prefix(prefix)  # which keys are the plugin's is unknown; the missing type is the error
            return
        try:
            plugin = self.plugins.new_instance(class_name, kind, prefix + "type")
            child: ConfigDef = plugin.config()  # type: ignore[attr-defined]
        except ConfigException:
            definition.allow_prefix(prefix)
            return  # reported when the type key itself is validated below
        for key in child.config_keys.values():
            if prefix + key.name not in definition:
                definition.define(prefix + key.name, key.type, key.default_value, key.validator, key.importance,
                                  key.documentation, group, key.order_in_group, key.width, key.display_name)
        for family, documentation in child.prefixes.items():
            definition.allow_prefix(prefix + family, documentation)

    def _check_sink_topics(self, props: Mapping[str, str], values: dict[str, ConfigValue]) -> None:
        topics = listed(props, "topics")
        regex = values["topics.regex"].value or ""
        if topics and regex:
            msg = "topics and topics.regex are mutually exclusive options, but both are set."
            values["topics"].add_error(msg)
            values["topics.regex"].add_error(msg)
        elif not topics and not regex:
            msg = "Must configure one of topics or topics.regex"
            values["topics"].add_error(msg)
            values["topics.regex"].add_error(msg)
        pattern = None
        if regex:
            try:
                pattern = re.compile(regex)
            except re.error as exc:
                values["topics.regex"].add_error(f"Invalid value {regex} for configuration topics.regex: {exc}")
        dlq = values["errors.deadletterqueue.topic.name"].value or ""
        if dlq and (dlq in topics or (pattern is not None and pattern.fullmatch(dlq))):
            values["errors.deadletterqueue.topic.name"].add_error(
                f"The DLQ topic '{dlq}' may not be included in the list of topics to consume"
            )

    def _merge_plugin(self, definition: ConfigDef, values: dict[str, ConfigValue], cls: type[Connector],
                      props: Mapping[str, str]) -> bool:
        """Whether the connector's definition could be merged (else connector.class has the error)."""
        try:
            connector = cls()
            plugin_def = connector.config()
            plugin_values = connector.validate(dict(props))
        except Exception as exc:
            values["connector.class"].add_error(f"{cls.__qualname__} could not validate its config: {exc}")
            return False
        _merge_definition(definition, plugin_def)
        for name, cv in plugin_values.items():
            existing = values.get(name)
            if existing is None:
                values[name] = cv
            else:
                existing.errors.extend(e for e in cv.errors if e not in existing.errors)
        return True


def _merge_definition(definition: ConfigDef, plugin_def: ConfigDef) -> None:
    """Add the connector's own keys and families to the framework's (which win where both define a key)."""
    for key in plugin_def.config_keys.values():
        if key.name not in definition:
            definition.define(key.name, key.type, key.default_value, key.validator, key.importance,
                              key.documentation, key.group, key.order_in_group, key.width, key.display_name,
                              key.dependents, key.recommender, key.internal)
    for family, documentation in plugin_def.prefixes.items():
        definition.allow_prefix(family, documentation)


def _unknown_key_warnings(definition: ConfigDef, props: Mapping[str, str], class_name: str | None) -> list[str]:
    """A line for each key of ``props`` no definition knows, with the key it was probably meant to be; the
    connector is named by its class as the config gives it, without the package."""
    owner = str(class_name or "").strip().rsplit(".", 1)[-1] or None
    return [unknown_key_warning(key, closest_key(key, definition.config_keys, definition.prefixes), owner)
            for key in definition.unknown_keys(props)]


def _add_error(values: dict[str, ConfigValue], key: str, props: Mapping[str, Any], message: str) -> None:
    values.setdefault(key, ConfigValue(key, props.get(key))).add_error(message)


_ALL = override_policy("All")
_TUNING = spark_override_policy("Tuning")


def _listed_predicate(predicates: tuple[str, ...], key: str, value: Any) -> str | None:
    """The error for a ``transforms.<alias>.predicate`` naming no alias of ``predicates``."""
    if value in (None, "") or value in predicates:
        return None
    return f"Predicate {value} is not listed in predicates"
