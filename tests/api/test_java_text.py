"""Values printed as Java prints them, maps in java.util.HashMap's iteration order."""

from __future__ import annotations

import decimal
import random

from connect.api.java_text import hash_map_order, java_hash_code, java_to_string


def test_hash_codes_are_javas() -> None:
    assert java_hash_code("hello") == 99162322
    assert java_hash_code("") == 0
    assert java_hash_code("🚀") == (0xD83D * 31 + 0xDE80)  # over UTF-16 code units, as Java counts them
    assert java_hash_code(-1) == 0xFFFFFFFF
    assert java_hash_code(2**40) == (2**40 >> 32)  # Long.hashCode folds the high half in
    assert java_hash_code(1.5) is None


def test_maps_print_in_hash_map_order_and_resize_with_their_size() -> None:
    # "origin" lands in an earlier bucket than "text": what Kafka's FileStreamSink writes for this map
    assert java_to_string({"text": "a", "origin": "***"}) == "{origin=***, text=a}"
    # 20 keys: 32 buckets, so "11".."19" (hashes 1568..1576) come before "0".."9" and "10" is last
    keys = [str(i) for i in range(20)]
    assert hash_map_order(keys) == [str(i) for i in range(11, 20)] + [str(i) for i in range(10)] + ["10"]


def test_lists_nulls_booleans_and_nesting() -> None:
    assert java_to_string({"b": [1, None, True], "a": {"z": False}}) == "{a={z=false}, b=[1, null, true]}"
    assert java_to_string(None) == "null"


def test_keys_without_a_known_hash_keep_insertion_order() -> None:
    assert java_to_string({2.5: 1, 1.5: 2}) == "{2.5=1, 1.5=2}"


def test_timestamps_dates_and_times_print_as_java_util_date_in_utc() -> None:
    import datetime as dt

    assert java_to_string(dt.datetime(2024, 2, 29, 13, 45, 7, 900, tzinfo=dt.UTC)) == "Thu Feb 29 13:45:07 UTC 2024"
    later = dt.datetime(2024, 2, 29, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-2)))
    assert java_to_string(later) == "Fri Mar 01 01:30:00 UTC 2024"  # shown in UTC whatever its zone
    assert java_to_string(dt.date(2024, 3, 1)) == "Fri Mar 01 00:00:00 UTC 2024"
    assert java_to_string(dt.time(13, 45, 7)) == "Thu Jan 01 13:45:07 UTC 1970"
    assert java_to_string([dt.date(1970, 1, 1)]) == "[Thu Jan 01 00:00:00 UTC 1970]"


# --- the cached map layout against a model of java.util.HashMap built one put at a time ----------------

def _java_string_hash(text: str) -> int:
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h


def _hash_map_iteration(keys: list[str]) -> list[str]:
    """The keys as a HashMap iterates them after ``put`` of each in turn: buckets split on every resize."""
    capacity, table, size = 16, [[] for _ in range(16)], 0
    for key in keys:
        h = _java_string_hash(key)
        spread = h ^ (h >> 16)
        table[spread & (capacity - 1)].append((spread, key))
        size += 1
        if size > capacity * 3 // 4:  # resize: each bucket splits into a low and a high half, in order
            capacity *= 2
            grown: list[list[tuple[int, str]]] = [[] for _ in range(capacity)]
            for bucket in table:
                for entry in bucket:
                    grown[entry[0] & (capacity - 1)].append(entry)
            table = grown
    return [key for bucket in table for _, key in bucket]


def _random_key(rng: random.Random) -> str:
    alphabet = "abcXYZ019_-" + "éßж日本" + "\U0001f680\U00010348"  # ASCII, BMP beyond Latin-1, astral
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))


def test_cached_layout_prints_as_a_hash_map_built_put_by_put() -> None:
    rng = random.Random(37)
    # "Aa"/"BB" and "AaAa"/"BBBB"/"AaBB"/"BBAa" share Java hash codes: colliding keys keep insertion order
    colliding = ["Aa", "BB", "AaAa", "BBBB", "AaBB", "BBAa"]
    for round_ in range(600):
        size = rng.choice([1, 2, 6, 7, 12, 13, 24, 25, 49, 64, 65, 100])  # around each resize threshold
        keys = list(dict.fromkeys(_random_key(rng) for _ in range(size)))
        if round_ % 3 == 0:
            keys = list(dict.fromkeys(keys + rng.sample(colliding, 3)))
        rng.shuffle(keys)
        value = {k: rng.choice([1, "v", None, True, [k], {k: 2}]) for k in keys}
        expected = "{" + ", ".join(f"{k}={java_to_string(value[k])}" for k in _hash_map_iteration(keys)) + "}"
        assert hash_map_order(keys) == _hash_map_iteration(keys)
        assert java_to_string(value) == expected  # first sight of this key set: the layout is worked out
        assert java_to_string(dict(value)) == expected  # from the cache
        nested = {"outer": value, "n": 1}
        assert java_to_string(nested) == java_to_string(dict(nested))


def test_equal_keys_of_other_types_are_never_taken_for_each_other() -> None:
    # Python holds 1, 1.0 and True as one key; Java hashes Integer 1 and orders Boolean true by insertion
    assert java_to_string({2: "a", 1: "b"}) == "{1=b, 2=a}"
    assert java_to_string({2: "a", True: "b"}) == "{2=a, true=b}"
    assert java_to_string({2: "a", 1: "b"}) == "{1=b, 2=a}"
    assert java_to_string({"x": 1, 5: 2}) == "{5=2, x=1}"  # mixed keys: worked out each time, as before


def test_the_layout_cache_is_bounded() -> None:
    from connect.api import java_text

    for i in range(java_text._LAYOUT_CACHE_SIZE * 2):
        java_to_string({f"k{i}": 1, "other": 2})
    java_to_string({str(i): i for i in range(java_text._LAYOUT_MAX_KEYS + 1)})  # too many keys to cache
    java_to_string({"x" * (java_text._LAYOUT_MAX_KEY_CHARS + 1): 1})  # too long to cache
    assert java_text._string_key_layout.cache_info().currsize <= java_text._LAYOUT_CACHE_SIZE


def test_numbers_print_as_javas_double_and_big_decimal_to_string() -> None:
    # Double.toString switches to E notation outside [1e-3, 1e7); BigDecimal keeps its scale
    assert java_to_string({"amount": 12345678.9, "rate": 0.0001, "n": 12.5}) == "{amount=1.23456789E7, rate=1.0E-4, n=12.5}"
    assert java_to_string([1e7, float("nan"), float("-inf"), -0.0]) == "[1.0E7, NaN, -Infinity, -0.0]"
    assert java_to_string(1e21) == "1.0E21"
    assert java_to_string({"price": decimal.Decimal("1.50"), "tiny": decimal.Decimal("1E-10")}) == (
        "{price=1.50, tiny=1E-10}"
    )


def test_table_capacities_follow_jdk_17() -> None:
    from connect.api.java_text import copied_map_capacity, hash_map_capacity

    # new HashMap<>(n) then n puts (Kafka's ReplaceField): 1 -> 2, 2..3 -> 4, 4..6 -> 8, 7..12 -> 16
    assert [hash_map_capacity(n, initial_capacity=n) for n in range(1, 14)] == [
        2, 4, 4, 8, 8, 8, 16, 16, 16, 16, 16, 16, 32]
    # new HashMap<>(): 16 until 12 keys, then doubling
    assert [hash_map_capacity(n) for n in (1, 12, 13, 24, 25)] == [16, 16, 32, 32, 64]
    # new HashMap<>(source) on JDK 17: tableSizeFor((int) (size / 0.75f + 1.0f)); 6 -> 16, 12 -> 32
    assert [copied_map_capacity(n, n) for n in (1, 2, 3, 5, 6, 11, 12)] == [2, 4, 8, 8, 16, 16, 32]
    assert copied_map_capacity(1, 2) == 4  # the copy grows with the keys put after
    assert copied_map_capacity(0, 1) == 16  # an empty source leaves the default table


def test_a_java_map_prints_in_the_order_its_layout_gives() -> None:
    from connect.api.java_text import LINKED, JavaMap, copied_layout, table_layout

    value = {k: i for i, k in enumerate("abcijq")}
    presized = JavaMap(value)
    presized.java_layout = table_layout(8, ("a", "q", "b", "c", "i", "j"))  # filled in value's Java order
    assert java_to_string(presized) == "{a=0, q=5, i=3, b=1, j=4, c=2}"  # as jshell prints it (JDK 17)
    linked = JavaMap(value)
    linked.java_layout = table_layout(LINKED)
    assert java_to_string(linked) == "{a=0, b=1, c=2, i=3, j=4, q=5}"
    # a copy of a 1-key map with one put: 4 buckets, where "b" (98) and "f" (102) share bucket 2
    copied = JavaMap({"f": 1, "b": 2})
    copied.java_layout = copied_layout({"f": 1})
    assert java_to_string(copied) == "{f=1, b=2}"
    assert java_to_string({"f": 1, "b": 2}) == "{b=2, f=1}"  # 16 buckets: "b" first


def test_a_java_map_changed_after_it_was_laid_out_still_prints_every_key() -> None:
    from connect.api.java_text import JavaMap, table_layout

    changed = JavaMap({"a": 1, "b": 2})
    changed.java_layout = table_layout(4, ("b", "a"))
    del changed["a"]
    changed["z"] = 3
    assert java_to_string(changed) == "{b=2, z=3}"


def _batch_printing_cases() -> list[list[object]]:
    """Batches as a sink meets them: one key set, several, maps laid out by transforms, and what else a
    value can be, with the values of a column of one type or mixed."""
    from connect.api.java_text import LINKED, JavaMap, table_layout

    class Text(str):
        def __str__(self) -> str:
            return "not the characters"

    rng = random.Random(7)
    column_values: list[list[object]] = [
        [0.37, 12.5, 0.0, -0.0, 9999999.0, -0.001],  # floats Python's repr prints as Java does
        [1e7, 1e-4, float("nan"), float("inf"), -1e-7, 2.5],  # and ones it does not
        [1, -7, 2**40, 2**70],
        [True, False],
        ["a", "", "é日\U0001f680", Text("t")],
        [None, None],
        [[1, "x"], {"in": 1, "ne": True}, decimal.Decimal("1.50")],
        [1, "x", None, False, 2.5],
    ]
    cases: list[list[object]] = []
    for column in column_values:  # one key set; every column of one kind, then of all kinds
        cases.append([{"id": i, "amount": rng.choice(column), "country": "DE"} for i in range(40)])
        cases.append([{"a": rng.choice(column), "b": rng.choice(column), "%s": rng.choice(column)}
                      for _ in range(40)])
    key_sets = [("id", "user"), ("user", "id"), ("id",), (), ("ts", "id", "user", "zz"), (1, 2), (True, 2)]
    cases.append([{k: rng.randint(0, 9) for k in rng.choice(key_sets)} for _ in range(200)])
    linked, presized = JavaMap({"b": 1, "a": 2}), JavaMap({"b": 3, "a": 4})
    linked.java_layout = table_layout(LINKED)
    presized.java_layout = table_layout(2, ("a", "b"))
    bare = JavaMap({"b": 5, "a": 6})  # no layout: printed as a plain dict
    cases.append([linked, presized, bare, {"b": 7, "a": 8}] * 10)
    cases.append([linked] * 10)
    cases.append([presized] * 9 + [linked])
    cases.append(["line", b"bytes", 7, [1, 2], Text("t"), {"k": "v"}] * 5)
    cases.append(["only", "strs"])
    cases.append([])
    return cases


def test_a_batch_prints_as_each_value_alone() -> None:
    from connect.api.java_text import java_texts

    for values in _batch_printing_cases():
        assert java_texts(values) == [java_to_string(v) for v in values], values


def test_a_batch_hands_what_is_not_a_str_or_map_to_the_given_printer() -> None:
    from connect.api.java_text import java_texts

    assert java_texts([b"x", {"k": 1}, "s", 2], lambda v: f"<{v!r}>") == ["<b'x'>", "{k=1}", "s", "<2>"]


def test_a_plain_dict_in_the_plain_order_of_a_java_map_prints_and_grows_as_it() -> None:
    from connect.api.java_text import (
        FieldSelection,
        JavaMap,
        copied_layout,
        copy_for_puts,
        copy_laid_out,
        plain_order,
        presized_layout,
        table_layout,
    )

    rng = random.Random(11)
    outcomes = set()
    for _ in range(400):
        keys = list(dict.fromkeys(_random_key(rng) for _ in range(rng.choice([1, 3, 6, 7, 12, 13, 20]))))
        source = {k: 0 for k in rng.sample(keys, len(keys))}
        layouts = [
            table_layout(rng.choice([0, 2, 8, 16, 32]), tuple(rng.sample(keys, len(keys)))),
            copied_layout(dict(list(source.items())[: rng.randint(0, len(keys))])),
            presized_layout(source, FieldSelection({}, frozenset(), frozenset())),
        ]
        for layout in layouts:
            laid_out = JavaMap({k: i for i, k in enumerate(keys)})
            laid_out.java_layout = layout
            order = plain_order(keys, layout)
            outcomes.add(order is None)
            if order is None:
                continue
            assert sorted(order) == sorted(keys)
            plain = {k: laid_out[k] for k in order}
            assert java_to_string(laid_out) == java_to_string(plain)
            for grown in (laid_out, plain):  # a put into the map itself, then into a copy of it
                grown["zz-put"] = 1
            assert java_to_string(laid_out) == java_to_string(plain)
            copies = []
            for original in (laid_out, plain):
                copied = copy_for_puts(original)
                copied["after-copy"] = 2
                copies.append(java_to_string(copy_laid_out(original, copied)))
            assert copies[0] == copies[1]
    assert outcomes == {True, False}
    assert plain_order(["a", "b"], table_layout(0)) is None  # a LinkedHashMap is never a HashMap
    assert plain_order([1, 2], table_layout(16, (2, 1))) is None  # only str keys
