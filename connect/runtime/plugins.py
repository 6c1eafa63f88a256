"""Plugin discovery and class-name resolution.

Plugins are found in two ways: Python entry points in the ``headrace.plugins``
group (each names a module) and ``plugin.path`` folders (every ``.py`` file
and package in them). Every concrete Connector, Converter, HeaderConverter,
Transformation, Predicate and ConfigProvider class in those modules is
registered, including nested classes such as ``InsertField.Value``.

A class resolves by its full Python name, by a suffix of it (so Kafka's
``org.apache.kafka.connect.transforms.InsertField$Value`` finds our
``InsertField.Value``, with ``$`` read as ``.``) and, for connectors, by the
name without its ``Connector`` suffix (``FileStreamSource``) — the aliases
Kafka Connect users already write.

Names arrive over REST and in configs, so they are only ever looked up among
the registered classes, never imported: importing a module runs its code.
Task classes are registered from the connectors (``Connector.task_class()``)
and resolve by their full name only, the form the worker writes to
``task.class``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

import attrs

from connect.api.config_provider import ConfigProvider
from connect.api.connector import Connector, SinkConnector, SourceConnector, Task
from connect.api.converter import Converter, HeaderConverter
from connect.api.errors import ConfigException
from connect.api.transform import Predicate, Transformation
from connect.runtime.kafka_class_names import kafka_class_name, python_class_name

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "headrace.plugins"

# order matters: the first matching base names the plugin type
_PLUGIN_TYPES: tuple[tuple[type, str], ...] = (
    (SourceConnector, "source"),
    (SinkConnector, "sink"),
    (Converter, "converter"),
    (HeaderConverter, "header_converter"),
    (Transformation, "transformation"),
    (Predicate, "predicate"),
    (ConfigProvider, "config_provider"),
)


@attrs.frozen
class PluginInfo:
    cls: type
    type: str  # the first kind, for display
    full_name: str
    kinds: tuple[str, ...] = ()  # every kind the class serves (a StringConverter is also a header converter)

    @property
    def listed_name(self) -> str:
        """The name the REST API shows: Kafka's class name when this plugin stands in for one of Kafka's."""
        return kafka_class_name(self.full_name)

    @property
    def version(self) -> str:
        try:
            return str(self.cls().version())  # type: ignore[call-arg]
        except Exception:  # a plugin whose constructor or version() fails still lists
            return "unknown"


def plugin_kinds(cls: type) -> tuple[str, ...]:
    return tuple(name for base, name in _PLUGIN_TYPES if issubclass(cls, base))


class PluginRegistry:
    def __init__(self, plugin_path: Iterable[str] = (), use_entry_points: bool = True) -> None:
        self._by_name: dict[str, PluginInfo] = {}
        self._aliases: dict[str, set[str]] = {}
        self._tasks: dict[str, type[Task]] = {}  # by full name
        # trailing parts of task names: Kafka Connect's task configs name Java classes
        # (org.apache.kafka.connect.file.FileStreamSourceTask) that a cluster taken over from Java still holds
        self._task_aliases: dict[str, set[str]] = {}
        if use_entry_points:
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                try:
                    self.scan_module(importlib.import_module(ep.value.split(":")[0]))
                except Exception as exc:
                    log.error("Cannot load plugin entry point %s=%s: %s", ep.name, ep.value, exc)
        for folder in plugin_path:
            if folder.strip():
                self.scan_folder(Path(folder.strip()))

    # --- discovery ----------------------------------------------------------------------
    def scan_folder(self, folder: Path) -> None:
        if not folder.exists():
            log.warning("plugin.path entry %s does not exist", folder)
            return
        candidates = [folder] if folder.is_file() else sorted(folder.iterdir())
        for path in candidates:
            if path.name.startswith((".", "_")):
                continue
            if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists()):
                self._import_path(path)

    def _import_path(self, path: Path) -> None:
        name = f"headrace_plugin_path.{path.stem}"
        location = path / "__init__.py" if path.is_dir() else path
        spec = importlib.util.spec_from_file_location(
            name, location, submodule_search_locations=[str(path)] if path.is_dir() else None
        )
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            log.error("Cannot load plugin module %s: %s", path, exc)
            del sys.modules[name]
            return
        log.info("Loaded plugins from %s", path)
        self.scan_module(module)

    def scan_module(self, module: ModuleType) -> None:
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for attr in names:
            obj = getattr(module, attr, None)
            if inspect.isclass(obj):
                self._register_tree(obj)

    def _register_tree(self, cls: type) -> None:
        self.register(cls)
        for value in vars(cls).values():
            if inspect.isclass(value) and value.__qualname__.startswith(cls.__qualname__ + "."):
                self._register_tree(value)

    def register(self, cls: type) -> PluginInfo | None:
        kinds = plugin_kinds(cls)
        if not kinds or inspect.isabstract(cls):
            return None
        kind = kinds[0]
        full = f"{cls.__module__}.{cls.__qualname__}"
        if full in self._by_name:
            return self._by_name[full]
        info = PluginInfo(cls, kind, full, kinds)
        self._by_name[full] = info
        parts = full.split(".")
        for i in range(1, len(parts)):
            self._aliases.setdefault(".".join(parts[i:]), set()).add(full)
        if kind in ("source", "sink"):
            if cls.__qualname__.endswith("Connector"):
                self._aliases.setdefault(cls.__qualname__[: -len("Connector")], set()).add(full)
            self._register_task_of(cls, full)
        return info

    def _register_task_of(self, connector_cls: type, connector_name: str) -> None:
        try:
            task_cls = connector_cls().task_class()
        except Exception as exc:  # the connector still lists; its tasks fail with a clear reason
            log.warning("Cannot learn the task class of connector %s: %s", connector_name, exc)
            return
        if inspect.isclass(task_cls) and issubclass(task_cls, Task) and not inspect.isabstract(task_cls):
            full = f"{task_cls.__module__}.{task_cls.__qualname__}"
            self._tasks[full] = task_cls
            parts = full.split(".")
            for i in range(1, len(parts)):
                self._task_aliases.setdefault(".".join(parts[i:]), set()).add(full)
        else:
            log.warning("Connector %s names %r as its task class, which is not a concrete Task",
                        connector_name, task_cls)

    # --- lookup ----------------------------------------------------------------------------
    def plugins(self, kinds: Iterable[str] | None = None) -> list[PluginInfo]:
        """One entry per (plugin, kind): a class serving two kinds is listed under each, as Kafka does."""
        wanted = set(kinds) if kinds is not None else None
        out = [attrs.evolve(p, type=k) for p in self._by_name.values() for k in p.kinds if wanted is None or k in wanted]
        return sorted(out, key=lambda p: (p.full_name, p.type))

    def lookup(self, name: str) -> PluginInfo | None:
        """The plugin a class name or alias names, or None."""
        key = python_class_name(name) or name.strip().replace("$", ".")
        if key in self._by_name:
            return self._by_name[key]
        parts = key.split(".")
        for i in range(len(parts)):
            matches = self._aliases.get(".".join(parts[i:]))
            if matches:
                if len(matches) > 1:
                    raise ConfigException(
                        message=f"Class name {name} is ambiguous: it may mean any of {', '.join(sorted(matches))}"
                    )
                return self._by_name[next(iter(matches))]
        return None

    def resolve(self, name: str, kind: str | tuple[str, ...], config_key: str) -> type:
        """The class for ``name``, checked to be of ``kind``; ConfigException naming ``config_key`` otherwise."""
        kinds = (kind,) if isinstance(kind, str) else kind
        info = self.lookup(name) if name and name.strip() else None
        if info is None:
            raise ConfigException(config_key, name, f"Class {name} could not be found among the installed plugins")
        if not set(info.kinds) & set(kinds):
            raise ConfigException(config_key, name, f"{info.full_name} is a {info.type}, not a {' or '.join(kinds)}")
        return info.cls

    def new_instance(self, name: str, kind: str | tuple[str, ...], config_key: str) -> object:
        cls = self.resolve(name, kind, config_key)
        try:
            return cls()
        except Exception as exc:
            raise ConfigException(config_key, name, f"cannot instantiate {cls.__qualname__}: {exc}") from exc

    def new_task(self, name: str) -> Task:
        """A new instance of the task class ``name`` (a full name, as in ``task.class``) of a registered connector."""
        full = python_class_name(name) or name.strip()
        task_cls = self._tasks.get(full) or self._task_by_alias(name.strip().replace("$", "."))
        if task_cls is None:
            raise ConfigException("task.class", name, "not the task class of any installed connector")
        try:
            return task_cls()
        except Exception as exc:
            raise ConfigException("task.class", name, f"cannot instantiate {task_cls.__qualname__}: {exc}") from exc


    def _task_by_alias(self, name: str) -> type[Task] | None:
        parts = name.split(".")
        for i in range(len(parts)):
            matches = self._task_aliases.get(".".join(parts[i:]))
            if matches:
                return self._tasks[next(iter(matches))] if len(matches) == 1 else None
        return None


def connector_type(cls: type) -> str:
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    if issubclass(cls, Connector):
        return "unknown"
    raise TypeError(f"{cls} is not a connector")
