"""The topic catalogue of a log directory: names, metadata files, creation, deletion, open partitions.

Layout under the log directory::

    <topic>.json            {"name", "id", "partitions", "configs"}: the topic exists iff this exists
    <topic>-<n>/            one directory per partition (see partition.py)
    __consumer_offsets/     committed group offsets (see groups.py)
    meta.properties         cluster.id
    .admin.lock             serialises topic creation and deletion across processes

A topic's metadata file is written last when creating it and removed first
when deleting it, so a half-made or half-removed topic is never listed;
partition directories without a metadata file are leftovers and are
removed on the next creation of that name.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import functools
import json
import logging
import os
import re
import shutil
import threading
import types
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from connect.api.topic_partition import TopicPartition
from connect.log.api import InvalidTopicError, LogError, TopicExistsError, UnknownTopicError
from connect.log.embedded.config import TopicConfig, broker_defaults
from connect.log.embedded.fsutil import FileLock, atomic_write, fsync_dir, make_private_dir
from connect.log.embedded.groups import GROUPS_DIR
from connect.log.embedded.partition import LOCK_FILE, PartitionLog, mark_partition_deleted
from connect.log.embedded.segment import LogSegment

log = logging.getLogger(__name__)

META_SUFFIX = ".json"
CLUSTER_FILE = "meta.properties"
ADMIN_LOCK = ".admin.lock"
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249


def validate_topic_name(name: str) -> None:
    """Kafka's rules: 1-249 characters from [a-zA-Z0-9._-], and not '.' or '..'."""
    if not name:
        raise InvalidTopicError("Topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"Topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(f"Topic name is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}")
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f"Topic name {name!r} is illegal: it may only contain ASCII letters, digits, '.', '_' and '-'"
        )
    if name == GROUPS_DIR:
        raise InvalidTopicError(f"Topic name {name!r} is reserved")


def is_internal(name: str) -> bool:
    return name.startswith("__")


@attrs.frozen
class TopicMeta:
    name: str
    id: str
    partitions: int
    configs: Mapping[str, str]


def read_meta(root: str, name: str) -> TopicMeta:
    try:
        with open(os.path.join(root, name + META_SUFFIX), encoding="utf-8") as f:
            raw = json.load(f)
    except FileNotFoundError:
        raise UnknownTopicError(f"Unknown topic {name!r}") from None
    return TopicMeta(raw["name"], raw.get("id", ""), int(raw["partitions"]), dict(raw.get("configs", {})))


def list_topic_names(root: str) -> list[str]:
    out = []
    for entry in os.listdir(root):
        if entry.endswith(META_SUFFIX) and entry != GROUPS_DIR + META_SUFFIX:
            name = entry[: -len(META_SUFFIX)]
            if _LEGAL.fullmatch(name) and name not in (".", ".."):
                out.append(name)
    return sorted(out)


def topic_partition_counts(root: str) -> dict[str, int]:
    """Every topic with its partition count, read straight from the files."""
    out = {}
    for name in list_topic_names(root):
        with contextlib.suppress(UnknownTopicError, OSError, ValueError, KeyError):
            out[name] = read_meta(root, name).partitions
    return out


_counts_lock = threading.Lock()
_counts: dict[str, tuple[tuple[int, int], Mapping[str, int]]] = {}


def cached_topic_partition_counts(root: str, version: int) -> Mapping[str, int]:
    """``topic_partition_counts``, read again only when ``version`` (this process's count of topic changes)
    or the directory's modification time moved: a thousand consumer groups then share one read of the
    topics instead of each reading every topic's metadata. Read-only: the mapping is shared."""
    try:
        key = (version, os.stat(root).st_mtime_ns)
    except OSError:
        return topic_partition_counts(root)
    with _counts_lock:
        hit = _counts.get(root)
        if hit is not None and hit[0] == key:
            return hit[1]
    counts = types.MappingProxyType(topic_partition_counts(root))
    with _counts_lock:
        _counts[root] = (key, counts)
    return counts


def new_cluster_id() -> str:
    # Kafka's form: a random UUID as URL-safe base64 without padding
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class TopicStore:
    """Topics of one log directory, as seen by one backend; caches open PartitionLogs.

    ``read_only``: nothing is created, changed or recovered (the directory
    must exist). ``recover``: partitions are recovered when first opened, as
    a writer does; otherwise only on their first append.
    """

    def __init__(self, root: str, worker_config: Mapping[str, Any], on_topics_changed: Callable[[str], None],
                 on_append: Callable[[str], None], read_only: bool = False, recover: bool = True) -> None:
        self.root = root
        self.read_only = read_only
        self._recover = recover and not read_only
        if read_only:
            if not os.path.isdir(root):
                raise LogError(f"There is no embedded log at {root}")
        else:
            make_private_dir(root)
        self.defaults = broker_defaults(worker_config)
        self._on_topics_changed = on_topics_changed
        self._on_append = on_append
        self._admin_lock_obj: FileLock | None = None
        self._mutex = threading.Lock()
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._meta: dict[str, TopicMeta] = {}
        if not read_only:
            self._remove_deleted_leftovers()

    @property
    def _admin_lock(self) -> FileLock:
        if self.read_only:
            raise LogError(f"The embedded log at {self.root} is open read-only")
        if self._admin_lock_obj is None:
            self._admin_lock_obj = FileLock(os.path.join(self.root, ADMIN_LOCK))
        return self._admin_lock_obj

    # -- metadata ----------------------------------------------------------------

    def meta(self, name: str) -> TopicMeta:
        cached = self._meta.get(name)
        if cached is not None:
            return cached
        meta = read_meta(self.root, name)
        self._meta[name] = meta
        return meta

    def reload_meta(self, name: str) -> TopicMeta:
        self._meta.pop(name, None)
        return self.meta(name)

    def forget(self, name: str) -> None:
        """Drop cached state of a topic another process may have deleted or re-created."""
        with self._mutex:
            self._meta.pop(name, None)
            for tp in [tp for tp in self._logs if tp.topic == name]:
                del self._logs[tp]

    def exists(self, name: str) -> bool:
        return os.path.exists(os.path.join(self.root, name + META_SUFFIX))

    def list(self, include_internal: bool = False) -> list[str]:
        return [n for n in list_topic_names(self.root) if include_internal or not is_internal(n)]

    def topic_config(self, meta: TopicMeta) -> TopicConfig:
        return TopicConfig.resolve(meta.configs, self.defaults)

    # -- partitions ----------------------------------------------------------------

    def partition_log(self, topic: str, partition: int) -> PartitionLog:
        """The open log of one partition (recovered on first open); raises UnknownTopicError."""
        tp = TopicPartition(topic, partition)
        plog = self._logs.get(tp)
        if plog is not None and not plog.deleted:
            return plog
        with self._mutex:
            plog = self._logs.get(tp)
            if plog is not None and not plog.deleted:
                return plog
            if plog is not None:
                self._meta.pop(topic, None)
            meta = self.meta(topic)
            if not 0 <= partition < meta.partitions:
                raise UnknownTopicError(f"Topic {topic!r} has no partition {partition}")
            directory = os.path.join(self.root, f"{topic}-{partition}")
            if not os.path.isdir(directory):
                self._meta.pop(topic, None)
                raise UnknownTopicError(f"Unknown topic {topic!r}")
            plog = PartitionLog(directory, tp, self.topic_config(meta), functools.partial(self._on_append, topic),
                                recover=self._recover)
            self._logs[tp] = plog
            return plog

    def open_logs(self) -> builtins.list[PartitionLog]:  # TopicStore.list shadows the builtin here
        """Open (and so recover) every partition of every topic."""
        out = []
        for name in list_topic_names(self.root):
            with contextlib.suppress(UnknownTopicError):
                meta = self.meta(name)
                for p in range(meta.partitions):
                    out.append(self.partition_log(name, p))
        return out

    # -- creation and deletion -------------------------------------------------------

    def create(self, name: str, partitions: int, configs: Mapping[str, Any], exist_ok: bool = False) -> bool:
        """Create a topic; returns False when it already existed and ``exist_ok``."""
        validate_topic_name(name)
        if partitions < 1:
            raise LogError(f"Number of partitions must be at least 1, got {partitions}")
        str_configs = {str(k): str(v) for k, v in configs.items()}
        TopicConfig.resolve(str_configs, self.defaults)
        with self._admin_lock.hold():
            if self.exists(name):
                if exist_ok:
                    return False
                raise TopicExistsError(f"Topic {name!r} already exists")
            self._remove_orphan_partitions(name)
            for p in range(partitions):
                directory = os.path.join(self.root, f"{name}-{p}")
                os.mkdir(directory)
                make_private_dir(directory)
                FileLock(os.path.join(directory, LOCK_FILE)).close()
                LogSegment(directory, 0, create=True).close()
            meta = {"name": name, "id": new_cluster_id(), "partitions": partitions, "configs": str_configs}
            atomic_write(os.path.join(self.root, name + META_SUFFIX), json.dumps(meta, indent=1).encode())
        self._meta.pop(name, None)
        log.info("Created topic %s with %d partition(s) and configs %s", name, partitions, str_configs or "{}")
        self._on_topics_changed(name)
        return True

    def delete(self, name: str) -> None:
        with self._admin_lock.hold():
            meta = read_meta(self.root, name)
            for p in range(meta.partitions):
                directory = os.path.join(self.root, f"{name}-{p}")
                if os.path.isdir(directory):
                    mark_partition_deleted(directory)
            os.unlink(os.path.join(self.root, name + META_SUFFIX))
            fsync_dir(self.root)
            self._remove_orphan_partitions(name)
        self.forget(name)
        log.info("Deleted topic %s (%d partition(s))", name, meta.partitions)
        self._on_topics_changed(name)

    def _remove_orphan_partitions(self, name: str) -> None:
        pattern = re.compile(re.escape(name) + r"-\d+")
        for entry in os.listdir(self.root):
            if pattern.fullmatch(entry):
                doomed = os.path.join(self.root, f".{uuid.uuid4().hex}-delete")
                os.rename(os.path.join(self.root, entry), doomed)
                shutil.rmtree(doomed, ignore_errors=True)

    def _remove_deleted_leftovers(self) -> None:
        for entry in os.listdir(self.root):
            if entry.endswith("-delete") and os.path.isdir(os.path.join(self.root, entry)):
                shutil.rmtree(os.path.join(self.root, entry), ignore_errors=True)

    # -- cluster id ----------------------------------------------------------------

    def cluster_id(self) -> str:
        path = os.path.join(self.root, CLUSTER_FILE)
        found = self._read_cluster_id(path)
        if found:
            return found
        with self._admin_lock.hold():
            found = self._read_cluster_id(path)
            if not found:
                found = new_cluster_id()
                atomic_write(path, f"version=0\ncluster.id={found}\n".encode())
        return found

    @staticmethod
    def _read_cluster_id(path: str) -> str | None:
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    key, _, value = line.strip().partition("=")
                    if key.strip() == "cluster.id" and value.strip():
                        return value.strip()
        except FileNotFoundError:
            pass
        return None

    def close(self) -> None:
        with self._mutex:
            logs, self._logs = list(self._logs.values()), {}
        for plog in logs:
            plog.close()
        if self._admin_lock_obj is not None:
            self._admin_lock_obj.close()
