"""Values as Java's ``toString`` prints them: what Kafka's FileStreamSink and ``Struct.toString`` write.

Lists print as ``[a, b]``, maps as ``{k=v, k2=v2}``, null as ``null``, booleans as ``true``/``false``.
Kafka's JsonConverter reads a JSON object into a ``java.util.HashMap``, so a map prints in that table's
bucket order rather than in insertion order; ``hash_map_order`` reproduces it for string and integer
keys (the keys a converter produces), so a sink file matches Kafka Connect's byte for byte; the order
is worked out once per set of string keys and cached, and ``java_texts`` prints a batch of maps sharing
a key set column by column (``java_map_lines`` prints maps already held as columns, see
``connect.api.map_columns``). Numbers print as ``Double.toString`` and
``BigDecimal.toString`` print them; a column of integers, booleans, nulls and doubles of 1e-3 <= |x| < 1e7
is written in one call as orjson writes a JSON array, which is the same text. Timestamps, dates and times print as ``java.util.Date`` does, in UTC.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import functools
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from typing import Any

import orjson

from connect.api.java_numbers import decimal_to_string, double_to_string

__all__ = [
    "LINKED",
    "FieldSelection",
    "JavaLayout",
    "JavaMap",
    "copied_layout",
    "presized_layout",
    "table_layout",
    "copied_map_capacity",
    "PLAIN_COPY_SIZES",
    "copy_for_puts",
    "copy_laid_out",
    "copy_is_plain",
    "hash_map_capacity",
    "hash_map_order",
    "java_date_string",
    "java_hash_code",
    "java_iteration_order",
    "java_map_lines",
    "java_texts",
    "java_to_string",
    "layout_of",
    "plain_order",
]

_MASK32 = 0xFFFFFFFF

# The Java whose HashMap this models is the one tests/compat runs Kafka Connect on: JDK 17. JDK 19 changed how
# ``new HashMap<>(map)`` sizes its table (Math.ceil instead of +1), so a copy's capacity differs there.
_DEFAULT_CAPACITY = 16
LINKED = 0
"""The capacity a ``JavaMap`` gives for a ``java.util.LinkedHashMap``, which iterates in insertion order."""

COPIED = -1
PRESIZED_FROM = -2


class FieldSelection:
    """The fields a transform keeps (all but ``excluded``; only ``included`` when not empty) and their new
    names: what a layout needs to know of a ReplaceField. Compared by identity: one per configuration."""

    __slots__ = ("excluded", "included", "renames")

    def __init__(self, renames: Mapping[str, str], excluded: frozenset[str], included: frozenset[str]) -> None:
        self.renames = dict(renames)
        self.excluded = excluded
        self.included = included


class JavaLayout:
    """How the Java map a ``JavaMap`` stands for was built, made by ``table_layout``, ``copied_layout`` or
    ``presized_layout``. Layouts are shared (one per way of building and source key set) and compared by
    identity, so that the order a map prints in is looked up at the cost of its key set's hash."""

    __slots__ = ("kind", "spec")

    def __init__(self, kind: int, spec: tuple[Any, ...]) -> None:
        self.kind = kind
        self.spec = spec


# Shared layouts, by what they are made of; forgotten wholesale when full (they are then made again)
_LAYOUTS: dict[tuple[Any, ...], JavaLayout] = {}
_LAYOUTS_KEPT = 4096


def _shared(kind: int, spec: tuple[Any, ...]) -> JavaLayout:
    key = (kind, *spec)
    layout = _LAYOUTS.get(key)
    if layout is None:
        if len(_LAYOUTS) >= _LAYOUTS_KEPT:
            _LAYOUTS.clear()
        layout = _LAYOUTS[key] = JavaLayout(kind, spec)
    return layout


def table_layout(capacity: int, inserted: tuple[Any, ...] | None = None) -> JavaLayout:
    """A map of ``capacity`` buckets (``LINKED``: a LinkedHashMap) whose keys Java put in ``inserted``'s
    order (None: the dict's own order)."""
    return _shared(capacity, (inserted,))


def copied_layout(source: Mapping[Any, Any]) -> JavaLayout:
    """``new HashMap<>(source)`` (JDK 17), keys maybe put after, for a dict made as ``dict(source)`` (the
    source's keys first, in its order) with the same puts."""
    return _shared(COPIED, (len(source), layout_of(source)))


def presized_layout(source: Mapping[Any, Any], selection: FieldSelection) -> JavaLayout:
    """``new HashMap<>(source.size())`` filled with ``selection``'s fields of ``source`` in its iteration
    order (Kafka's ReplaceField), for a dict holding the same keys."""
    return _shared(PRESIZED_FROM, (tuple(source), layout_of(source), selection))


class JavaMap(dict[Any, Any]):
    """A map that says how the Java map it stands for was built, so that it prints in that map's order.

    A plain dict stands for a ``new HashMap<>()`` filled in the dict's order (as Kafka's JsonConverter
    builds one). A transform whose Java counterpart builds its map otherwise (pre-sized, copied from
    another map, a LinkedHashMap) returns a JavaMap whose ``java_layout`` is the table capacity (``LINKED``
    for a LinkedHashMap) and, when Java put the keys in another order than this dict holds them, that
    order; see ``JavaLayout``. A copy of a JavaMap (``dict(m)``, ``m.copy()``) is a plain dict.
    """

    __slots__ = ("java_layout",)

    java_layout: JavaLayout


def hash_map_capacity(size: int, initial_capacity: int | None = None, start: int | None = None) -> int:
    """The table capacity of ``new HashMap<>(initial_capacity)`` (``new HashMap<>()`` when None) once
    ``size`` distinct keys are in it; ``start``: the capacity it already has (its pre-sizing done)."""
    if start is not None:
        capacity = start
    elif initial_capacity is None:
        capacity = _DEFAULT_CAPACITY
    else:
        capacity = _table_size_for(initial_capacity)
    # a put that takes the size past three quarters of the capacity doubles it (a capacity of 1 has threshold 0)
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def copied_map_capacity(source_size: int, size: int) -> int:
    """The capacity of ``new HashMap<>(source)`` (JDK 17) for a source of ``source_size`` entries, once
    ``size`` distinct keys are in it (the source's and any put after)."""
    if source_size == 0:  # an empty source leaves the map as ``new HashMap<>()``
        return hash_map_capacity(size)
    # (int)(s / 0.75f + 1.0f): s / 0.75 is an integer or a third off one, so float rounding never matters
    return hash_map_capacity(size, start=_table_size_for(source_size * 4 // 3 + 1))


@functools.lru_cache(maxsize=4096)
def copy_is_plain(source_size: int, size: int) -> bool:
    """Whether ``new HashMap<>(source)`` of a plain dict's map, with puts taking it to ``size`` keys, iterates
    as a ``new HashMap<>()`` filled in the same order does: the same capacity, and keys sharing a bucket
    there shared one in the source, so they meet in the order they were put. A copy for which this holds
    can stay a plain dict (most JSON records: 6 to 11 keys copy into the default 16 buckets)."""
    return copied_map_capacity(source_size, size) == hash_map_capacity(size)


def copy_for_puts(source: Mapping[Any, Any]) -> dict[Any, Any]:
    """A copy of ``source`` to put keys into, as Java's ``new HashMap<>(source)`` is; hand it to
    ``copy_laid_out`` once the puts are done."""
    if type(source) is JavaMap:
        copied = JavaMap(source)
        copied.java_layout = copied_layout(source)
        return copied
    return dict(source)


def copy_laid_out(source: Mapping[Any, Any], updated: dict[Any, Any]) -> dict[Any, Any]:
    """``updated``, made by ``copy_for_puts(source)`` and puts, as a map that prints as Java's copy with
    the same puts: itself when a plain dict prints so, else a JavaMap saying how Java's was built."""
    if type(updated) is JavaMap or copy_is_plain(len(source), len(updated)):
        return updated
    made = JavaMap(updated)
    made.java_layout = copied_layout(source)
    return made


def _table_size_for(wanted: int) -> int:
    return 1 if wanted <= 1 else 1 << (wanted - 1).bit_length()


# Sizes of plain dicts whose Java copy, with or without one key put after, prints as a plain dict does:
# a batch path checks a record's size against it instead of calling copy_is_plain
PLAIN_COPY_SIZES = frozenset(n for n in range(1, 1025) if copy_is_plain(n, n) and copy_is_plain(n, n + 1))


def java_hash_code(key: Any) -> int | None:
    """``key.hashCode()`` as an unsigned 32-bit number for String and Integer/Long keys; None otherwise."""
    if isinstance(key, str):
        h = 0
        # a character beyond the BMP counts as its two UTF-16 units, as in Java
        for unit in map(ord, key) if key.isascii() or max(key) < "\U00010000" else _utf16_units(key):
            h = (31 * h + unit) & _MASK32
        return h
    if isinstance(key, int) and not isinstance(key, bool):
        if -(2**31) <= key < 2**31:
            return key & _MASK32
        v = key & 0xFFFFFFFFFFFFFFFF
        return (v ^ (v >> 32)) & _MASK32
    return None


def _utf16_units(text: str) -> Iterable[int]:
    for ch in text:
        code = ord(ch)
        if code < 0x10000:
            yield code
        else:
            code -= 0x10000
            yield 0xD800 + (code >> 10)
            yield 0xDC00 + (code & 0x3FF)


def hash_map_order(keys: Sequence[Any], capacity: int | None = None) -> list[Any]:
    """``keys`` (in insertion order) in the order a ``java.util.HashMap`` holding them iterates.

    ``capacity``: the map's table capacity (``LINKED``: a LinkedHashMap); None for a ``new HashMap<>()``,
    which starts with 16 buckets and doubles whenever it holds more than three quarters of its capacity.
    A key's bucket is its spread hash modulo the capacity, and a bucket keeps insertion order (resizes
    split buckets without reordering; a bucket of more than 8 keys in a table of 64 or more becomes a
    tree, not modelled). Keys of other types keep insertion order.
    """
    if capacity == LINKED:
        return list(keys)
    hashes = [java_hash_code(k) for k in keys]
    if any(h is None for h in hashes):
        return list(keys)
    if capacity is None:
        capacity = hash_map_capacity(len(keys))
    buckets = [((h ^ (h >> 16)) & (capacity - 1), i) for i, h in enumerate(hashes) if h is not None]
    return [keys[i] for _, i in sorted(buckets)]


def java_to_string(value: Any) -> str:
    """``value`` as Java's ``String.valueOf`` would print the Connect value it stands for."""
    text_of = _PRINTERS.get(type(value))
    if text_of is not None:
        return text_of(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return _list_text(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return java_date_string(value)
    if isinstance(value, Mapping):
        return _map_text(value)
    if isinstance(value, float):
        return double_to_string(value)
    if isinstance(value, _decimal.Decimal):
        return decimal_to_string(value)
    return str(value)


def _texts(values: Sequence[Any]) -> Iterator[str]:
    """Each value's text, by the printer of its exact type, iterated in C: a Python frame only for the
    values that need one (a float, a nested map or list), and for nesting just one frame a level."""
    return map(operator.call, map(_PRINTERS.__getitem__, map(type, values)), values)


def _list_text(value: list[Any] | tuple[Any, ...]) -> str:
    return "[" + ", ".join(_texts(value)) + "]"


# A map's keys, in HashMap order, with each key's printed prefix ("key="), a getter for its values in that
# order, the keys in that order, and the texts that go before each value and after the last. Records of one
# topic mostly share one key set, so the order is worked out once per key set (and way of building the
# map) rather than once per record.
_Layout = tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]], tuple[str, ...], tuple[str, ...]]

# Bounds on what the cache holds: at most this many key sets, each of at most so many keys and characters
# (a map with more is laid out afresh each time; its values cost more to print than its order anyway).
_LAYOUT_CACHE_SIZE = 1024
_LAYOUT_MAX_KEYS = 64
_LAYOUT_MAX_KEY_CHARS = 2048


@functools.lru_cache(maxsize=_LAYOUT_CACHE_SIZE)
def _string_key_layout(keys: tuple[Any, ...], java_layout: JavaLayout | None = None) -> _Layout | None:
    """The layout of a map with these keys (in the dict's order) built as ``java_layout`` says (None: a
    ``new HashMap<>()`` filled in that order), or None unless every key is a str.

    Only all-str key sets are laid out: Python's equality treats ``1``, ``1.0`` and ``True`` as one
    key, but Java hashes (and so orders) them differently, so an equal tuple of other keys is no
    evidence of an equal order. None is cached too: any tuple equal to this one holds a non-str as well.
    """
    if not all(type(k) is str for k in keys):
        return None
    ordered = tuple(_java_order(keys, java_layout))
    prefixes = tuple(k + "=" for k in ordered)
    # the text before each value and after the last, for printing a batch of maps column by column
    between = ("{" + prefixes[0], *[", " + prefix for prefix in prefixes[1:]], "}") if prefixes else ("{}",)
    if len(ordered) == 1:
        only = ordered[0]
        return prefixes, lambda m: (m[only],), ordered, between
    return prefixes, operator.itemgetter(*ordered), ordered, between


def _java_order(keys: tuple[Any, ...], java_layout: JavaLayout | None) -> list[Any]:
    if java_layout is None:
        return hash_map_order(keys)
    inserted, capacity = _java_table(keys, java_layout)
    return hash_map_order(keys if inserted is None else inserted, capacity)


def _java_table(keys: tuple[Any, ...], java_layout: JavaLayout) -> tuple[tuple[Any, ...] | None, int]:
    """The order in which Java put ``keys`` into the map ``java_layout`` describes (None: the dict's own
    order) and that map's capacity (``LINKED`` for a LinkedHashMap)."""
    kind, spec = java_layout.kind, java_layout.spec
    inserted: tuple[Any, ...] | None
    if kind == COPIED:
        source_size, source_layout = spec
        source_size = min(source_size, len(keys))
        # Java put the source's keys in the source's iteration order, then the new ones in put order
        inserted = (*_java_order(keys[:source_size], source_layout), *keys[source_size:])
        capacity = copied_map_capacity(source_size, len(keys))
    elif kind == PRESIZED_FROM:
        source_keys, source_layout, selection = spec
        renames, excluded, included = selection.renames, selection.excluded, selection.included
        # new HashMap<>(source.size()), then each kept key put (renamed) in the source's iteration order
        inserted = tuple(dict.fromkeys(
            renames.get(k, k) for k in _java_order(source_keys, source_layout)
            if k not in excluded and (not included or k in included)))
        capacity = hash_map_capacity(len(inserted), initial_capacity=len(source_keys))
    else:
        capacity, (inserted,) = kind, spec
    if inserted is None:
        return None, capacity
    if len(inserted) != len(keys) or not set(keys).issuperset(inserted):
        # the map was changed after its maker laid it out: keys Java never put go last, as puts would
        present, known = set(keys), set(inserted)
        inserted = tuple(k for k in inserted if k in present) + tuple(k for k in keys if k not in known)
        if capacity != LINKED:
            capacity = hash_map_capacity(len(keys), start=capacity)
    return inserted, capacity


def plain_order(keys: Sequence[Any], java_layout: JavaLayout) -> tuple[str, ...] | None:
    """The order in which a plain dict holding ``keys`` stands for the same Java map as a ``JavaMap``
    holding them (in this order) laid out as ``java_layout`` says: that map's iteration order, when it has
    as many buckets as a ``new HashMap<>()`` of as many keys (the dict filled in that order then has the same
    keys in each bucket in the same order); None when it has not. A map made in this order can be a plain
    dict, which costs less to make and to print. Worked out for a key set, not per record."""
    keys = tuple(keys)
    if not all(type(k) is str for k in keys):  # Python takes 1 and True for one key, Java does not
        return None
    inserted, capacity = _java_table(keys, java_layout)
    if capacity != hash_map_capacity(len(keys)):  # a LinkedHashMap's (LINKED) never equals a HashMap's
        return None
    return tuple(hash_map_order(keys if inserted is None else inserted, capacity))


def layout_of(value: Mapping[Any, Any]) -> JavaLayout | None:
    """How the Java map ``value`` stands for was built (None: a ``new HashMap<>()`` filled in its order)."""
    return getattr(value, "java_layout", None) if type(value) is JavaMap else None


def _layout_of(value: Mapping[Any, Any], keys: tuple[Any, ...]) -> _Layout | None:
    java_layout = getattr(value, "java_layout", None) if type(value) is JavaMap else None
    if len(keys) <= _LAYOUT_MAX_KEYS:
        try:
            if sum(map(len, keys)) <= _LAYOUT_MAX_KEY_CHARS:
                return _string_key_layout(keys, java_layout)
        except TypeError:  # a key without a length (a number) or without a hash: not cached
            pass
    return None


def java_iteration_order(value: Mapping[Any, Any]) -> tuple[Any, ...]:
    """The keys of ``value`` in the order Java iterates the map it stands for (a ``JavaMap`` as its
    ``java_layout`` says, any other map as a ``new HashMap<>()`` filled in its order): the order in which
    a Java transform that copies or walks the map meets them."""
    keys = tuple(value)
    layout = _layout_of(value, keys)
    if layout is not None:
        return layout[2]
    java_layout = getattr(value, "java_layout", None) if type(value) is JavaMap else None
    return tuple(_java_order(keys, java_layout))


def _map_text(value: Mapping[Any, Any]) -> str:
    keys = tuple(value)
    if not keys:
        return "{}"
    layout = _layout_of(value, keys)
    if layout is None:
        java_layout = getattr(value, "java_layout", None) if type(value) is JavaMap else None
        ordered = _java_order(keys, java_layout)
        return "{" + ", ".join([f"{java_to_string(k)}={java_to_string(value[k])}" for k in ordered]) + "}"
    prefixes, values_in_order, _, _ = layout
    return "{" + ", ".join(map(operator.add, prefixes, _texts(values_in_order(value)))) + "}"


_JAVA_LAYOUT = operator.attrgetter("java_layout")

# A group of maps this small is printed map by map: printing by columns costs a few calls per key
_COLUMNS_FROM = 4


def java_texts(values: Sequence[Any], other: Callable[[Any], str] = java_to_string) -> list[str]:
    """``[java_to_string(v) for v in values]`` (``other`` printing what is neither a str nor a plain map),
    made a batch at a time: maps sharing a key set (and way of being built) are printed column by column,
    each column's values by one printer when they share a type, so that most of the work runs in C."""
    kinds = set(map(type, values))
    if kinds == {str}:
        return list(values)
    texts: list[Any] = list(values)
    # the maps, grouped by key set: a plain dict's by its keys, a JavaMap's by its keys and layout
    plain: dict[tuple[Any, ...], list[int]] = {}
    laid_out: dict[tuple[Any, ...], list[int]] = {}
    count = len(values)
    if count and len(kinds) == 1 and (dict in kinds or JavaMap in kinds):
        key_sets = list(map(tuple, values))
        first = key_sets[0]
        if key_sets.count(first) == count:  # the usual batch: one key set
            if dict in kinds:
                plain[first] = list(range(count))
            else:
                try:
                    layouts = list(map(_JAVA_LAYOUT, values))
                except AttributeError:  # a JavaMap made without a layout: the loop below takes it
                    pass
                else:
                    if layouts.count(layouts[0]) == count:
                        laid_out[first, layouts[0]] = list(range(count))
    if not plain and not laid_out:
        for i, value in enumerate(values):
            kind = type(value)
            if kind is str:
                continue
            if kind is dict:
                group = plain.setdefault(tuple(value), [])
            elif kind is JavaMap:
                group = laid_out.setdefault((tuple(value), getattr(value, "java_layout", None)), [])
            else:
                texts[i] = other(value)
                continue
            group.append(i)
    for keys, members in plain.items():
        _print_group(values, members, keys, texts)
    for (keys, _), members in laid_out.items():
        _print_group(values, members, keys, texts)
    return texts


def _print_group(values: Sequence[Any], members: list[int], keys: tuple[Any, ...], texts: list[Any]) -> None:
    """Puts into ``texts`` the printed maps of ``values`` at ``members``, which have ``keys`` and one way
    of being built."""
    maps = [values[i] for i in members]
    layout = _layout_of(maps[0], keys) if keys and len(members) >= _COLUMNS_FROM else None
    if layout is None:  # few, empty, or keys not all str (Python takes 1 and True for one key, Java does not)
        for i, value in zip(members, maps, strict=True):
            texts[i] = _map_text(value)
        return
    _, _, ordered, between = layout
    # each line joined from the texts between the values and the values' texts, taken a column at a time
    pieces: list[Iterable[str]] = []
    for text, key in zip(between, ordered, strict=False):  # between has one more: the text after the last value
        pieces.append(itertools.repeat(text))
        pieces.append(_column_texts(list(map(operator.itemgetter(key), maps))))
    pieces.append(itertools.repeat(between[-1]))
    for i, line in zip(members, map("".join, zip(*pieces, strict=False)), strict=False):  # the repeats never end
        texts[i] = line


def _column_texts(column: Sequence[Any], kinds: Set[type] | None = None) -> Iterable[str]:
    """Each value's text; by one printer when the values share a type. ``kinds``: the values' exact types."""
    if kinds is None:
        kinds = set(map(type, column))
    if len(kinds) == 1:
        kind = next(iter(kinds))
        if kind is str:
            return column
        if kind is bool:
            return map(_BOOL_TEXT, column)
    if kinds <= _JSON_NUMBERS:
        texts = _numbers_text(column, kinds)
        if texts is not None:
            return texts
    if kinds == _FLOAT_ONLY:
        return _doubles_text(column)
    if kinds == _INT_ONLY:  # an integer beyond 64 bits
        return map(int.__repr__, column)
    return _texts(column)


_INT_ONLY = {int}


# Kinds of values whose JSON text, as orjson writes it, is Java's: integers, booleans and null; and doubles
# of 1e-3 <= |x| < 1e7 (and zero), which orjson writes as Python's repr does (shortest round trip, plainly)
# and so as Double.toString does.
_JSON_NUMBERS = frozenset((int, float, bool, type(None)))
_FLOAT_ONLY = {float}
_INTS_AND_FLOATS = frozenset((int, float))
# a double of magnitude below 1e-3 that orjson writes plainly (0.0001, 0.000999...), where Java writes 1.0E-4
_SMALL_DOUBLES = (b"[0.000", b",0.000", b"-0.000")


def _numbers_text(column: Sequence[Any], kinds: Set[type]) -> list[str] | None:
    """Each value's text, for a column of ints, floats, booleans and None (``kinds``): written as one JSON
    array by orjson and split, or None when a value would be written otherwise than Java prints it."""
    if not column:
        return []
    has_floats = float in kinds
    if has_floats and (not kinds <= _INTS_AND_FLOATS or not _orjson_writes_doubles_as_java()):
        return None  # a null beside a float could be a NaN's; a boolean's text holds an "e"
    try:
        text = orjson.dumps(column)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits
        return None
    if has_floats and (
        b"e" in text or b"n" in text  # an exponent, or null: not finite
        or max(column) >= 1e7 or min(column) <= -1e7
        or any(small in text for small in _SMALL_DOUBLES)
    ):
        return None
    return text[1:-1].decode("ascii").split(",")


@functools.cache
def _orjson_writes_doubles_as_java() -> bool:
    """Whether this orjson writes doubles of 1e-3 <= |x| < 1e7 as Python's repr (and so Java) does: its
    releases have changed how they write floats before."""
    probes = [0.0, -0.0, 0.001, -0.001, 0.0015, 0.001000001, 0.1, 0.2 + 0.1, 1 / 3, 2 / 3, 1.0, 5.0, 12.5, 100.0,
              0.37, 123456.789, 1e6, 1234567.0, 9999999.0, 9999999.5, 9999999.999999998, 4.35, 2.675, 1.005]
    return orjson.dumps(probes)[1:-1].decode("ascii").split(",") == list(map(float.__repr__, probes))


@functools.lru_cache(maxsize=_LAYOUT_CACHE_SIZE)
def _line_parts(keys: tuple[str, ...], java_layout: JavaLayout | None) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """For maps of these (str) keys built as ``java_layout`` says: the position in ``keys`` of each key in
    print order, and the texts before each value and after the last (with the line's newline)."""
    ordered = _java_order(keys, java_layout)
    position = {key: i for i, key in enumerate(keys)}
    prefixes = [key + "=" for key in ordered]
    between = ("{" + prefixes[0], *[", " + prefix for prefix in prefixes[1:]], "}\n") if prefixes else ("{}\n",)
    return tuple(position[key] for key in ordered), between


def java_map_lines(keys: tuple[str, ...], java_layout: JavaLayout | None, columns: Sequence[Sequence[Any]],
                   count: int, kinds: Sequence[frozenset[type] | None] | None = None) -> str:
    """The texts of ``count`` maps that share ``keys`` (all str, in their dict order) and ``java_layout``,
    given by column (``columns[i]`` holds every map's value of ``keys[i]``), each followed by a newline:
    what ``java_to_string`` prints of each map, made a column at a time. ``kinds``, when known: the exact
    types of each column's values (None where not known)."""
    if count == 0:
        return ""
    if len(keys) > _LAYOUT_MAX_KEYS or sum(map(len, keys)) > _LAYOUT_MAX_KEY_CHARS:
        order, between = _line_parts.__wrapped__(keys, java_layout)  # too big to keep: worked out afresh
    else:
        order, between = _line_parts(keys, java_layout)
    # every line's pieces, line after line, in one list joined once: the texts between the values laid out
    # by repeating one line's, then each column's texts put in its place in every line by one slice
    width = 2 * len(order) + 1
    line: list[Any] = [None] * width
    line[0::2] = between
    pieces = line * count
    for i, place in enumerate(order):
        column = columns[place]
        known = kinds[place] if kinds is not None else None
        pieces[2 * i + 1::width] = _column_texts(column, known if known is not None else set(map(type, column)))
    return "".join(pieces)


def _doubles_text(column: Sequence[float]) -> Iterable[str]:
    # Python's repr lays out zero and 1e-3 <= |x| < 1e7 as Double.toString does; a NaN makes the sum a NaN
    magnitudes = list(map(abs, column))
    total = sum(column)
    if total == total and max(magnitudes) < 1e7 and min(filter(None, magnitudes), default=1.0) >= 1e-3:
        return map(float.__repr__, column)
    return map(_double_text, column)


def _double_text(value: float) -> str:
    # Python's repr lays out 1e-3 <= |x| < 1e7 as Double.toString does; NaN fails both tests
    return repr(value) if 1e-3 <= value < 1e7 or -1e7 < value <= -1e-3 else double_to_string(value)


class _Printers(dict[type, Callable[[Any], str]]):
    """The printer of each exact type; any other type (a subclass too) goes through java_to_string."""

    def __missing__(self, key: type) -> Callable[[Any], str]:
        return java_to_string


_BOOL_TEXT = {True: "true", False: "false"}.__getitem__

_PRINTERS = _Printers({
    str: str.__str__,
    int: int.__repr__,
    bool: _BOOL_TEXT,
    type(None): {None: "null"}.__getitem__,
    float: _double_text,
    dict: _map_text,
    JavaMap: _map_text,
    list: _list_text,
    tuple: _list_text,
})


_EPOCH_DAY = _dt.date(1970, 1, 1)


def java_date_string(value: _dt.datetime | _dt.date | _dt.time) -> str:
    """``java.util.Date.toString`` in UTC: ``Thu Feb 29 13:45:07 UTC 2024``.

    Kafka's Timestamp, Date and Time values are ``java.util.Date`` objects, which print in the JVM's
    default zone; Headrace prints them in UTC (a Date is midnight UTC, a Time is on 1970-01-01).
    """
    if isinstance(value, _dt.datetime):
        moment = value.astimezone(_dt.UTC) if value.tzinfo else value
    elif isinstance(value, _dt.date):
        moment = _dt.datetime(value.year, value.month, value.day)
    else:
        moment = _dt.datetime.combine(_EPOCH_DAY, value.replace(tzinfo=None))
    # English names whatever the locale, as Date.toString uses
    day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[moment.weekday()]
    month = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")[moment.month - 1]
    return f"{day} {month} {moment.day:02d} {moment:%H:%M:%S} UTC {moment.year}"
