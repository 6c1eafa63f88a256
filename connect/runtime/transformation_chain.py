"""The ordered transforms of a connector, each optionally gated by a (negated) predicate."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from connect.api.config import ConfigType, parse_type
from connect.api.records import ConnectRecord
from connect.api.transform import Predicate, Transformation
from connect.runtime.connector_config import ConnectorConfig
from connect.runtime.plugins import PluginRegistry

__all__ = ["TransformationChain", "build_chain"]

R = TypeVar("R", bound=ConnectRecord)


@attrs.frozen
class TransformStage:
    alias: str
    transform: Transformation
    predicate: Predicate | None = None
    negate: bool = False

    @property
    def class_name(self) -> str:
        return type(self.transform).__qualname__


def _gated(transform: Callable[[ConnectRecord], ConnectRecord | None], test: Callable[[ConnectRecord], bool],
           negate: bool) -> Callable[[ConnectRecord], ConnectRecord | None]:
    """``transform`` applied only when ``test(record) XOR negate``; other records pass through unchanged."""

    def step(record: ConnectRecord) -> ConnectRecord | None:
        return transform(record) if bool(test(record)) != negate else record

    return step


class TransformationChain:
    def __init__(self, stages: list[TransformStage]) -> None:
        self.stages = stages
        # set when a stage raised: which transform (or its predicate) failed, for error reports
        self.failed_stage: TransformStage | None = None
        # one callable per stage, so that the per-record loop is a call and a None check per stage; only
        # a stage with a predicate pays for the wrapper that tests it
        self._steps = tuple(
            stage.transform.apply if stage.predicate is None
            else _gated(stage.transform.apply, stage.predicate.test, stage.negate)
            for stage in stages
        )
        # Whole batches go through the chain only when every stage is a transform with its own apply_batch
        # and no predicate: after a failure the batch is transformed again record by record, which only
        # such a transform promises to bear. Any other chain runs record by record, each record once.
        self.batched = bool(stages) and all(
            stage.predicate is None and type(stage.transform).apply_batch is not Transformation.apply_batch
            for stage in stages
        )

    def apply(self, record: R) -> R | None:
        """The transformed record, or None when a transform dropped it.

        As in Kafka Connect, a stage with a predicate applies its transform only when
        ``predicate.test(record) XOR negate``; otherwise the record passes through unchanged.
        """
        index = 0
        current: Any = record  # a transform of R-records makes R-records (Transformation[R])
        try:
            for step in self._steps:
                current = step(current)
                if current is None:
                    return None
                index += 1
        except BaseException:
            self.failed_stage = self.stages[index]
            raise
        return current

    def apply_batch(self, records: Sequence[R]) -> Sequence[R]:
        """The transformed records of ``records``, in order, without the dropped ones.

        Each stage takes the whole batch (``Transformation.apply_batch``). Called on the task's thread, and
        only when ``batched``. Raises what a stage raised, with ``failed_stage`` set: the caller then runs
        ``apply`` record by record over the same ``records``, so the failing record is found and handled
        alone.
        """
        current: Any = records
        for stage in self.stages:
            try:
                current = stage.transform.apply_batch(current)
            except BaseException:
                self.failed_stage = stage
                raise
            if not current:
                break
        return current  # type: ignore[no-any-return]

    def close(self) -> None:
        for stage in self.stages:
            stage.transform.close()
            if stage.predicate is not None:
                stage.predicate.close()


def _sub_configs(config: Mapping[str, Any], prefix: str, exclude: set[str]) -> dict[str, Any]:
    return {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix) and k[len(prefix):] not in exclude}


def build_chain(plugins: PluginRegistry, config: ConnectorConfig) -> TransformationChain | None:
    """Instantiate and configure the chain a parsed connector config describes; None when it has no transforms."""
    aliases = config.transforms
    if not aliases:
        return None
    props = config.originals
    predicates: dict[str, Predicate] = {}
    for alias in config.predicates:
        prefix = f"predicates.{alias}."
        predicate = plugins.new_instance(str(props.get(prefix + "type", "")), "predicate", prefix + "type")
        predicate.configure(_sub_configs(props, prefix, {"type"}))  # type: ignore[attr-defined]
        predicates[alias] = predicate  # type: ignore[assignment]
    stages = []
    for alias in aliases:
        prefix = f"transforms.{alias}."
        transform = plugins.new_instance(str(props.get(prefix + "type", "")), "transformation", prefix + "type")
        transform.configure(_sub_configs(props, prefix, {"type", "predicate", "negate"}))  # type: ignore[attr-defined]
        pred_alias = props.get(prefix + "predicate") or None
        negate = bool(parse_type(prefix + "negate", props.get(prefix + "negate", False), ConfigType.BOOLEAN))
        stages.append(TransformStage(alias, transform, predicates.get(pred_alias) if pred_alias else None, negate))  # type: ignore[arg-type]
    return TransformationChain(stages)
