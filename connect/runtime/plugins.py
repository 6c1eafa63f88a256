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

Importing every entry point's modules costs a worker about a fifth of a
CPU-second at each start (fastavro, asyncio, the Spark sinks...), for plugins
most workers never use. What a scan found is therefore kept in a plugin index
(``$XDG_CACHE_HOME/headrace``, else ``~/.cache/headrace``; a file per
interpreter and import path): the classes of each entry point, their kinds and
task classes. A start that finds the index current registers the classes from
it and imports a plugin's module only when the plugin is first used; listing
the plugins with their versions imports them all. The index is current while
the installed distributions (the ``entry_points.txt`` and ``.pth`` files and
the folders on ``sys.path``) and the source files of every indexed module (the
entry point's package and the modules of each class and its bases) are as they
were when it was written; an entry point whose scan logged a problem is never
indexed, so its problem is logged at every start. Without a writable cache
directory every start scans, as before.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import importlib.util
import inspect
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import orjson

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


class ClassRef:
    """A plugin class by its module and qualified name, imported when first asked for (from the index), or
    the class itself (from a scan)."""

    __slots__ = ("_cls", "_lock", "module", "qualname")

    def __init__(self, module: str, qualname: str, cls: type | None = None) -> None:
        self.module = module
        self.qualname = qualname
        self._cls = cls
        self._lock = threading.Lock()

    @classmethod
    def of(cls, plugin_cls: type) -> ClassRef:
        return cls(plugin_cls.__module__, plugin_cls.__qualname__, plugin_cls)

    @property
    def full_name(self) -> str:
        return f"{self.module}.{self.qualname}"

    def load(self) -> type:
        """The class; ImportError naming it and the reason when its module no longer defines it."""
        if self._cls is not None:
            return self._cls
        with self._lock:  # a module's first import may come from several threads at once
            if self._cls is None:
                try:
                    obj: Any = importlib.import_module(self.module)
                    for part in self.qualname.split("."):
                        obj = getattr(obj, part)
                except Exception as exc:
                    raise ImportError(f"plugin {self.full_name} could not be loaded: {exc}") from exc
                if not inspect.isclass(obj):
                    raise ImportError(f"plugin {self.full_name} is no longer a class")
                self._cls = obj
            return self._cls


@attrs.frozen
class PluginInfo:
    ref: ClassRef
    type: str  # the first kind, for display
    full_name: str
    kinds: tuple[str, ...] = ()  # every kind the class serves (a StringConverter is also a header converter)

    @property
    def cls(self) -> builtins.type:
        """The plugin's class, its module imported now if it was not yet (ImportError if it cannot be)."""
        return self.ref.load()

    @property
    def listed_name(self) -> str:
        """The name the REST API shows: Kafka's class name when this plugin stands in for one of Kafka's."""
        return kafka_class_name(self.full_name)

    @property
    def version(self) -> str:
        try:
            return str(self.cls().version())
        except Exception:  # a plugin whose module, constructor or version() fails still lists
            return "unknown"


def plugin_kinds(cls: type) -> tuple[str, ...]:
    return tuple(name for base, name in _PLUGIN_TYPES if issubclass(cls, base))


class PluginRegistry:
    def __init__(self, plugin_path: Iterable[str] = (), use_entry_points: bool = True) -> None:
        self._by_name: dict[str, PluginInfo] = {}
        self._aliases: dict[str, set[str]] = {}
        self._tasks: dict[str, ClassRef] = {}  # by full name
        # trailing parts of task names: Kafka Connect's task configs name Java classes
        # (org.apache.kafka.connect.file.FileStreamSourceTask) that a cluster taken over from Java still holds
        self._task_aliases: dict[str, set[str]] = {}
        self._task_of: dict[str, ClassRef] = {}  # by the full name of the connector
        # while an entry point is scanned: what it registers (for the index) and whether it logged a problem
        self._scanned: list[dict[str, Any]] | None = None
        self._scan_problem = False
        if use_entry_points:
            self._load_entry_points(PluginIndex.default())
        for folder in plugin_path:
            if folder.strip():
                self.scan_folder(Path(folder.strip()))

    # --- discovery ----------------------------------------------------------------------
    def _load_entry_points(self, index: PluginIndex | None) -> None:
        environment = _environment_key()
        stored = index.read(environment) if index is not None else None
        if stored is None:
            from importlib.metadata import entry_points  # only when the index is missing or stale: 50 ms

            stored = [{"name": ep.name, "value": ep.value} for ep in entry_points(group=ENTRY_POINT_GROUP)]
        entries = []
        for entry in stored:
            if "plugins" in entry and _files_unchanged(entry["files"]):
                for plugin in entry["plugins"]:
                    self._register_indexed(plugin)
                entries.append(entry)
            else:
                entries.append(self._scan_entry_point(str(entry["name"]), str(entry["value"])))
        if index is not None and entries != stored:
            index.write(environment, entries)

    def _scan_entry_point(self, name: str, value: str) -> dict[str, Any]:
        """Import and scan one entry point's module; what to index of it (only its name if it logged a problem)."""
        entry: dict[str, Any] = {"name": name, "value": value}
        module_name = value.split(":")[0]
        self._scanned, self._scan_problem = [], False
        try:
            try:
                module = importlib.import_module(module_name)
                self.scan_module(module)
            except Exception as exc:
                log.error("Cannot load plugin entry point %s=%s: %s", name, value, exc)
                return entry
            if not self._scan_problem:
                entry["plugins"] = self._scanned
                entry["files"] = _fingerprint(_indexed_files(module, self._scanned))
            return entry
        finally:
            self._scanned = None

    def _register_indexed(self, plugin: dict[str, Any]) -> None:
        ref = ClassRef(plugin["module"], plugin["qualname"])
        if ref.full_name in self._by_name:
            return
        kinds = tuple(plugin["kinds"])
        self._add(PluginInfo(ref, kinds[0], ref.full_name, kinds))
        task = plugin.get("task")
        if task is not None:
            self._add_task(ref.full_name, ClassRef(task[0], task[1]))

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
        full = f"{cls.__module__}.{cls.__qualname__}"
        info = self._by_name.get(full)
        if info is None:
            info = self._add(PluginInfo(ClassRef.of(cls), kinds[0], full, kinds))
            if kinds[0] in ("source", "sink"):
                self._register_task_of(cls, full)
        if self._scanned is not None:  # the index keeps every class an entry point names, found before or not
            task = self._task_of.get(full)
            self._scanned.append({"module": cls.__module__, "qualname": cls.__qualname__, "kinds": list(kinds),
                                  "task": [task.module, task.qualname] if task is not None else None})
        return info

    def _add(self, info: PluginInfo) -> PluginInfo:
        full = info.full_name
        self._by_name[full] = info
        parts = full.split(".")
        for i in range(1, len(parts)):
            self._aliases.setdefault(".".join(parts[i:]), set()).add(full)
        if info.type in ("source", "sink") and info.ref.qualname.endswith("Connector"):
            self._aliases.setdefault(info.ref.qualname[: -len("Connector")], set()).add(full)
        return info

    def _register_task_of(self, connector_cls: type, connector_name: str) -> None:
        try:
            task_cls = connector_cls().task_class()
        except Exception as exc:  # the connector still lists; its tasks fail with a clear reason
            log.warning("Cannot learn the task class of connector %s: %s", connector_name, exc)
            self._scan_problem = True
            return
        if inspect.isclass(task_cls) and issubclass(task_cls, Task) and not inspect.isabstract(task_cls):
            self._add_task(connector_name, ClassRef.of(task_cls))
        else:
            log.warning("Connector %s names %r as its task class, which is not a concrete Task",
                        connector_name, task_cls)
            self._scan_problem = True

    def _add_task(self, connector_name: str, ref: ClassRef) -> None:
        full = ref.full_name
        ref = self._tasks.setdefault(full, ref)
        self._task_of[connector_name] = ref
        parts = full.split(".")
        for i in range(1, len(parts)):
            self._task_aliases.setdefault(".".join(parts[i:]), set()).add(full)

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
        try:
            return info.cls
        except ImportError as exc:
            raise ConfigException(config_key, name, str(exc)) from exc

    def new_instance(self, name: str, kind: str | tuple[str, ...], config_key: str) -> object:
        cls = self.resolve(name, kind, config_key)
        try:
            return cls()
        except Exception as exc:
            raise ConfigException(config_key, name, f"cannot instantiate {cls.__qualname__}: {exc}") from exc

    def task_class(self, name: str) -> type:
        """The task class ``name`` (a full name, as in ``task.class``) of a registered connector."""
        full = python_class_name(name) or name.strip()
        task_ref = self._tasks.get(full) or self._task_by_alias(name.strip().replace("$", "."))
        if task_ref is None:
            raise ConfigException("task.class", name, "not the task class of any installed connector")
        try:
            return task_ref.load()
        except ImportError as exc:
            raise ConfigException("task.class", name, str(exc)) from exc

    def new_task(self, name: str) -> Task:
        """A new instance of the task class ``name`` (a full name, as in ``task.class``) of a registered connector."""
        task_cls = self.task_class(name)
        try:
            task: Task = task_cls()
            return task
        except Exception as exc:
            raise ConfigException("task.class", name, f"cannot instantiate {task_cls.__qualname__}: {exc}") from exc

    def _task_by_alias(self, name: str) -> ClassRef | None:
        parts = name.split(".")
        for i in range(len(parts)):
            matches = self._task_aliases.get(".".join(parts[i:]))
            if matches:
                return self._tasks[next(iter(matches))] if len(matches) == 1 else None
        return None


class PluginIndex:
    """The file that keeps what the entry points' scans found (see the module's documentation)."""

    FORMAT = 1

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def default(cls) -> PluginIndex | None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        if not os.path.isabs(base):
            return None
        # an index per interpreter and import path: workers of two virtualenvs see different plugins
        owner = hashlib.sha256(orjson.dumps([sys.executable, sys.path])).hexdigest()[:16]
        return cls(Path(base, "headrace", f"plugin-index-{owner}.json"))

    def read(self, environment: str) -> list[dict[str, Any]] | None:
        """The entries indexed for ``environment``; None if there are none (or they are for another)."""
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                # it names modules to import: only one that no other user could have written is believed
                if st.st_uid != os.getuid() or st.st_mode & 0o022:
                    log.warning("Ignoring the plugin index %s: another user could have written it", self.path)
                    return None
                stored = orjson.loads(f.read())
        except (OSError, orjson.JSONDecodeError):
            return None
        if not isinstance(stored, dict) or stored.get("format") != self.FORMAT or \
                stored.get("environment") != environment or not isinstance(stored.get("entry_points"), list):
            return None
        entries: list[dict[str, Any]] = stored["entry_points"]
        return entries

    def write(self, environment: str, entries: list[dict[str, Any]]) -> None:
        """Replace the index at once (several workers may start together); a cache that cannot be written
        only means the next start scans again."""
        body = orjson.dumps({"format": self.FORMAT, "environment": environment, "entry_points": entries})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".plugin-index-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(body)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            log.debug("Cannot write the plugin index %s: %s", self.path, exc)


def _environment_key() -> str:
    """What changes when a distribution is installed, removed or upgraded: the folders on the import path,
    their ``.pth`` files and the entry points of each distribution in them."""
    parts: list[Any] = [PluginIndex.FORMAT, sys.version, sys.executable, sys.path]
    for folder in sys.path:
        try:
            parts.append((folder, os.stat(folder or ".").st_mtime_ns))
            with os.scandir(folder or ".") as found:
                names = sorted(e.name for e in found)
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                parts.append(_stat(os.path.join(folder, name, "entry_points.txt")))
            elif name.endswith(".pth"):
                parts.append(_stat(os.path.join(folder, name)))
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()


def _stat(path: str) -> list[Any]:
    try:
        st = os.stat(path)
    except OSError:
        return [path, None, None]
    return [path, st.st_mtime_ns, st.st_size]


def _package_files(module: ModuleType) -> Iterator[str]:
    """The module's file, or every Python file of its package."""
    for folder in getattr(module, "__path__", None) or ():
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            yield root  # a file added or removed changes its folder
            yield from (os.path.join(root, f) for f in sorted(files) if f.endswith(".py"))
    if getattr(module, "__file__", None):
        yield str(module.__file__)


def _indexed_files(module: ModuleType, plugins: list[dict[str, Any]]) -> list[str]:
    """The files that decide what a scan of ``module`` finds: its own, and those of the modules of every class
    it registered, of their bases and of their task classes."""
    files = dict.fromkeys(_package_files(module))
    classes: list[type] = []
    for plugin in plugins:
        for module_name, qualname in [(plugin["module"], plugin["qualname"])] + ([plugin["task"]] if plugin["task"]
                                                                                  else []):
            try:
                classes.append(ClassRef(module_name, qualname).load())
            except ImportError:
                continue
    for cls in classes:
        for base in cls.__mro__:
            path = getattr(sys.modules.get(base.__module__), "__file__", None)
            if path:
                files.setdefault(str(path))
    return list(files)


def _fingerprint(paths: list[str]) -> list[list[Any]]:
    return [_stat(path) for path in paths]


def _files_unchanged(fingerprint: list[list[Any]]) -> bool:
    return all(_stat(path) == [path, mtime, size] for path, mtime, size in fingerprint)


def connector_type(cls: type) -> str:
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    if issubclass(cls, Connector):
        return "unknown"
    raise TypeError(f"{cls} is not a connector")
