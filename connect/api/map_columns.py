"""Schemaless maps of one batch held as columns while they share a key set: ``MapColumns``.

A converter reading JSON without schemas makes one dict per record, and records of one topic mostly share
their keys. ``MapColumns`` is a sequence of those maps that can also be read as a table: the key set (the
dict order of the keys), how the Java map the maps stand for was built (see ``connect.api.java_text``) and
one column per key. A transform that rearranges keys (inserts a static field, masks, renames) then does
its work once per key set and column instead of once per record, and FileStreamSink prints straight from
the columns. Whatever reads the maps one by one gets, made on first read, the very dicts the per-record
path gives; from then on the table is no longer offered (``table`` is None), as those dicts may be changed.

Columns are tuples and are never changed: batches made from one another share them.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from connect.api.java_text import JavaLayout, JavaMap, layout_of

__all__ = ["KeyRearrangement", "MapColumns", "MapTable", "rearrangement"]

_PLAIN = {dict}
# values that one object can stand for in every map: immutable
_SHARED_KINDS = frozenset((str, int, float, bool, type(None)))
_LAID_OUT = {JavaMap}


class MapTable(NamedTuple):
    """Maps sharing one key set, by column: ``columns[i]`` holds every map's value of ``keys[i]``.

    ``kinds``, when known, holds for each column the exact types its values may have (a set that holds at
    least those; None where not known), so that a column made of one value need not be looked through.
    """

    keys: tuple[str, ...]
    java_layout: JavaLayout | None
    columns: tuple[tuple[Any, ...], ...]
    kinds: tuple[frozenset[type] | None, ...] | None = None

    def kinds_of(self, place: int) -> frozenset[type]:
        """The exact types of the values of column ``place`` (a set holding at least those)."""
        known = self.kinds[place] if self.kinds is not None else None
        return known if known is not None else frozenset(map(type, self.columns[place]))


# Given maps read optimistically and, when the table was asked for first, their table: the maps to use instead,
# or None (see MapColumns.of)
Confirm = Callable[[list[Any], "MapTable | None"], "list[Any] | None"]


class MapColumns(Sequence[Any]):
    """A batch of schemaless maps: a sequence of dicts that may be read as a ``MapTable`` instead.

    Made from the maps (``of``: the table is worked out when first asked for, if they share one key set
    of str keys and one layout) or from a table (``from_table``: the maps are made when first read).
    Slicing gives a MapColumns; reading a map, iterating or comparing gives the maps and stops the table
    being offered. Only str keys are taken: Python takes 1, 1.0 and True for one key, Java does not.
    """

    __slots__ = ("_maps", "_table", "_count", "_checked", "_read", "_confirm")

    def __init__(self, maps: list[Any] | None, table: MapTable | None, count: int,
                 confirm: Confirm | None = None) -> None:
        self._maps = maps
        self._table = table
        self._count = count
        self._checked = table is not None  # whether the maps were looked at for a shared key set
        self._read = False  # whether the maps were handed out: they may have been changed since
        self._confirm = confirm

    @classmethod
    def of(cls, values: list[Any], confirm: Confirm | None = None) -> MapColumns | None:
        """The values as a MapColumns when they are all plain dicts or all JavaMaps, else None. The list is
        kept, and is what reading gives: it must not be changed afterwards.

        ``confirm``, for maps read optimistically: called once, before the maps or the table are first used,
        with the maps and (when the table is asked for first) their table; it gives the maps to use instead,
        or None to keep these. A reader thus checks its work the cheaper way for what is asked of it.
        """
        kinds = set(map(type, values))
        if kinds != _PLAIN and kinds != _LAID_OUT:
            return None
        return cls(values, None, len(values), confirm)

    @classmethod
    def from_table(cls, table: MapTable, count: int) -> MapColumns:
        """``count`` maps given by ``table`` (whose columns each hold ``count`` values)."""
        return cls(None, table, count)

    def table(self) -> MapTable | None:
        """The maps by column, or None when they do not share a key set or were already read one by one."""
        if self._read:
            return None
        if not self._checked:
            self._checked = True
            self._table = _table_of(self._maps or [])
            if self._confirm is not None:
                self._confirmed(self._table)
        return self._table

    def maps(self) -> list[Any]:
        """The maps, one per record (the same objects on every call); the table is no longer offered."""
        if self._confirm is not None:
            self._confirmed(None)
        self._read = True
        maps = self._maps
        if maps is None:
            assert self._table is not None  # made from a table, when not from maps
            maps = self._maps = _made(self._table, self._count)
        return maps

    def _confirmed(self, table: MapTable | None) -> None:
        confirm, self._confirm = self._confirm, None
        if confirm is None:
            return
        replaced = confirm(self._maps or [], table)
        if replaced is not None:
            self._maps = replaced
            self._table = _table_of(replaced) if self._checked else None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self._slice(index)
        return self.maps()[index]

    def _slice(self, index: slice) -> MapColumns:
        start, stop, step = index.indices(self._count)
        if step == 1 and start == 0 and stop == self._count:
            return self  # what a batch of one part slices itself to
        count = len(range(start, stop, step))
        table = self.table()
        if table is not None:
            return MapColumns(None, table._replace(columns=tuple(column[index] for column in table.columns)), count)
        return MapColumns(self.maps()[index], None, count)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.maps())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return self.maps() == list(other)

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a list of maps is

    def __repr__(self) -> str:
        table = None if self._read else self._table
        shape = f"keys {list(table.keys)}" if table is not None else "as maps"
        return f"MapColumns({self._count} maps, {shape})"

    @staticmethod
    def joined(parts: Sequence[MapColumns]) -> MapColumns | None:
        """The maps of ``parts``, in order, as one MapColumns whose table is theirs end to end (one part: that
        part); None unless every part offers a table with the same keys and layout."""
        if len(parts) == 1:
            return parts[0]
        found = [part.table() for part in parts]
        tables = [table for table in found if table is not None]
        first = tables[0] if tables else None
        if first is None or len(tables) != len(found):
            return None
        for table in tables:
            if table.keys != first.keys or table.java_layout is not first.java_layout:
                return None
        columns = tuple(tuple(itertools.chain.from_iterable(column))
                        for column in zip(*[table.columns for table in tables], strict=True))
        kinds: tuple[frozenset[type] | None, ...] | None = None
        if all(table.kinds is not None for table in tables):
            kinds = tuple(None if None in known else frozenset().union(*known)
                          for known in zip(*[table.kinds or () for table in tables], strict=True))
        return MapColumns.from_table(MapTable(first.keys, first.java_layout, columns, kinds), sum(map(len, parts)))


def _table_of(maps: list[Any]) -> MapTable | None:
    """The table of ``maps`` when they share one key set of str keys (in one dict order) and one layout."""
    if not maps:
        return None
    key_sets = list(map(tuple, maps))
    keys = key_sets[0]
    if key_sets.count(keys) != len(key_sets) or not all(type(k) is str for k in keys):
        return None
    java_layout = layout_of(maps[0])
    if java_layout is not None:
        layouts = [getattr(m, "java_layout", None) for m in maps]
        if layouts.count(java_layout) != len(layouts):
            return None
    elif type(maps[0]) is JavaMap:  # a JavaMap made without a layout: not one of a kind
        return None
    if not keys:
        return MapTable((), java_layout, (), ())
    # a pass in C per key (cheaper than transposing the maps' values with zip), and one for its types
    columns = tuple(tuple(map(operator.itemgetter(key), maps)) for key in keys)
    return MapTable(keys, java_layout, columns, tuple(frozenset(map(type, column)) for column in columns))


def _made(table: MapTable, count: int) -> list[Any]:
    keys, java_layout, columns = table.keys, table.java_layout, table.columns
    if not keys:
        rows: Iterator[Any] = itertools.repeat((), count)
    else:
        rows = zip(*columns, strict=True)
    pairs = map(zip, itertools.repeat(keys), rows)
    if java_layout is None:
        return list(map(dict, pairs))
    made = list(map(JavaMap, pairs))
    # setattr returns None, so any() runs the map to its end
    any(map(setattr, made, itertools.repeat("java_layout"), itertools.repeat(java_layout)))
    return made


class _Column:
    """A template map's value: the column it stands for."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class KeyRearrangement(NamedTuple):
    """What a function of one map does to a key set: the keys and layout of the map it makes and, for each
    of its keys, the column the value comes from (an index) or, when the function put a value of its own,
    that value (``constants``, at the same position; the index is then -1)."""

    keys: tuple[str, ...]
    java_layout: JavaLayout | None
    sources: tuple[int, ...]
    constants: tuple[Any, ...]

    def apply(self, columns: Sequence[tuple[Any, ...]], count: int,
              kinds: Sequence[frozenset[type] | None] | None = None) -> MapColumns:
        """The maps made of a table of ``count`` maps whose columns are ``columns`` (``kinds``: their
        values' types where known, as ``MapTable.kinds``)."""
        repeat = tuple.__mul__
        made = tuple(columns[source] if source >= 0 else repeat((constant,), count)
                     for source, constant in zip(self.sources, self.constants, strict=True))
        made_kinds = tuple((kinds[source] if kinds is not None else None) if source >= 0
                           else frozenset((type(constant),))
                           for source, constant in zip(self.sources, self.constants, strict=True))
        return MapColumns.from_table(MapTable(self.keys, self.java_layout, made, made_kinds), count)


def rearrangement(keys: tuple[str, ...], java_layout: JavaLayout | None,
                  per_map: Callable[[dict[str, Any]], Mapping[Any, Any]]) -> KeyRearrangement | None:
    """What ``per_map`` does to every map of this key set and layout, found by running it once on a map
    whose values stand for the columns; None when what it makes is not a dict or JavaMap of str keys.

    ``per_map`` must treat a value only as something to move or drop (not look at it), and make a new map.
    """
    template: dict[str, Any]
    if java_layout is None:
        template = dict(zip(keys, map(_Column, range(len(keys))), strict=True))
    else:
        template = JavaMap(zip(keys, map(_Column, range(len(keys))), strict=True))
        template.java_layout = java_layout
    made = per_map(template)
    if (type(made) is not dict and type(made) is not JavaMap) or not all(type(k) is str for k in made):
        return None
    new_layout = layout_of(made)
    if type(made) is JavaMap and new_layout is None:
        return None
    values = list(made.values())
    if not all(type(v) is _Column or type(v) in _SHARED_KINDS for v in values):
        return None  # a value of its own that is mutable: each map would need its own
    sources = tuple(v.index if type(v) is _Column else -1 for v in values)
    constants = tuple(None if type(v) is _Column else v for v in values)
    return KeyRearrangement(tuple(made), new_layout, sources, constants)
