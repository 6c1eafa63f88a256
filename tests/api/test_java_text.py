"""Values printed as Java prints them, maps in java.util.HashMap's iteration order."""

from __future__ import annotations

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
