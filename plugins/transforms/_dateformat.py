"""Java SimpleDateFormat patterns (``yyyy-MM-dd HH:mm:ss.SSS`` ...) in Python, always in UTC.

TimestampConverter and TimestampRouter take their ``format`` settings as Java
patterns, so users can paste them from Kafka Connect configs. strftime cannot
express several of them (``SSS`` milliseconds, ``h``/``k``/``K`` hours,
unpadded numbers), hence a small compiler of the pattern into formatter and
parser steps.

Differences from Java worth knowing: week-based fields (``Y``, ``w``) use ISO
weeks rather than the JVM locale's; names are English; the time zone is
always UTC, as both transforms set it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

__all__ = ["JavaDateFormat"]

_UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=_UTC)

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

# Every letter SimpleDateFormat accepts; any other ASCII letter is an error, as in Java.
_PATTERN_LETTERS = "GyYMLwWDdFEuaHkKhmsSzZX"
_NUMERIC = set("yYMLwWDdFuHkKhmsS")

_MS_PER_DAY = 86_400_000
# Finest time unit each letter depends on; lets callers cache formatted text.
_UNIT_MS = {"S": 1, "s": 1000, "m": 60_000, "H": 3_600_000, "k": 3_600_000, "K": 3_600_000, "h": 3_600_000}
_UNIT_MS["a"] = 3_600_000


def _pad(number: int, width: int) -> str:
    return str(number).zfill(width) if number >= 0 else "-" + str(-number).zfill(width)


def _year_text(year: int, count: int) -> str:
    return _pad(year % 100, 2) if count == 2 else _pad(year, count)


def _formatter(letter: str, count: int) -> Callable[[dt.datetime], str]:
    if letter == "G":
        return lambda t: "AD" if t.year > 0 else "BC"
    if letter == "y":
        return lambda t: _year_text(t.year, count)
    if letter == "Y":
        return lambda t: _year_text(t.isocalendar()[0], count)
    if letter in "ML":
        if count >= 4:
            return lambda t: _MONTHS[t.month - 1]
        if count == 3:
            return lambda t: _MONTHS[t.month - 1][:3]
        return lambda t: _pad(t.month, count)
    if letter == "w":
        return lambda t: _pad(t.isocalendar()[1], count)
    if letter == "W":
        # Weeks start on Sunday, as in the US locale Java defaults to.
        return lambda t: _pad((t.day - 1 + (t.replace(day=1).weekday() + 1) % 7) // 7 + 1, count)
    if letter == "D":
        return lambda t: _pad(t.timetuple().tm_yday, count)
    if letter == "d":
        return lambda t: _pad(t.day, count)
    if letter == "F":
        return lambda t: _pad((t.day - 1) // 7 + 1, count)
    if letter == "E":
        if count >= 4:
            return lambda t: _DAYS[t.weekday()]
        return lambda t: _DAYS[t.weekday()][:3]
    if letter == "u":
        return lambda t: _pad(t.isoweekday(), count)
    if letter == "a":
        return lambda t: "AM" if t.hour < 12 else "PM"
    if letter == "H":
        return lambda t: _pad(t.hour, count)
    if letter == "k":
        return lambda t: _pad(t.hour or 24, count)
    if letter == "K":
        return lambda t: _pad(t.hour % 12, count)
    if letter == "h":
        return lambda t: _pad(t.hour % 12 or 12, count)
    if letter == "m":
        return lambda t: _pad(t.minute, count)
    if letter == "s":
        return lambda t: _pad(t.second, count)
    if letter == "S":
        # Java's S is a millisecond count, zero-padded to the letter count (not a fraction).
        return lambda t: _pad(t.microsecond // 1000, count)
    if letter == "z":
        text = "Coordinated Universal Time" if count >= 4 else "UTC"
        return lambda t: text
    if letter == "Z":
        return lambda t: "+0000"
    # X: ISO 8601 zone, which Java prints as "Z" for UTC.
    return lambda t: "Z"


def _tokenize(pattern: str) -> list[tuple[str, int] | str]:
    tokens: list[tuple[str, int] | str] = []
    literal: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "'":
            if i + 1 < n and pattern[i + 1] == "'":
                literal.append("'")
                i += 2
                continue
            end = i + 1
            quoted: list[str] = []
            while True:
                if end >= n:
                    raise ValueError("Unterminated quote")
                if pattern[end] == "'":
                    if end + 1 < n and pattern[end + 1] == "'":
                        quoted.append("'")
                        end += 2
                        continue
                    break
                quoted.append(pattern[end])
                end += 1
            literal.extend(quoted)
            i = end + 1
            continue
        if ("a" <= ch <= "z") or ("A" <= ch <= "Z"):
            if ch not in _PATTERN_LETTERS:
                raise ValueError(f"Illegal pattern character '{ch}'")
            if literal:
                tokens.append("".join(literal))
                literal = []
            count = 1
            while i + count < n and pattern[i + count] == ch:
                count += 1
            tokens.append((ch, count))
            i += count
            continue
        literal.append(ch)
        i += 1
    if literal:
        tokens.append("".join(literal))
    return tokens


class JavaDateFormat:
    """One compiled SimpleDateFormat pattern; formats and parses UTC instants."""

    __slots__ = ("pattern", "_formatters", "_tokens", "_parser", "_unit_ms", "_cache")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens = _tokenize(pattern)
        self._formatters: list[Callable[[dt.datetime], str] | str] = [
            token if isinstance(token, str) else _formatter(*token) for token in self._tokens
        ]
        letters = [token[0] for token in self._tokens if not isinstance(token, str)]
        self._unit_ms = min((_UNIT_MS.get(letter, _MS_PER_DAY) for letter in letters), default=0)
        self._parser: re.Pattern[str] | None = None
        self._cache: dict[int, str] = {}

    def format(self, moment: dt.datetime) -> str:
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=_UTC)
        elif moment.utcoffset():
            moment = moment.astimezone(_UTC)
        return "".join(part if isinstance(part, str) else part(moment) for part in self._formatters)

    @property
    def unit_ms(self) -> int:
        """The finest time unit the pattern shows, in ms (0: it shows no time at all); instants in the
        same unit format alike."""
        return self._unit_ms

    def format_millis(self, epoch_millis: int) -> str:
        """Format an epoch-millisecond instant; repeated instants within the pattern's finest unit are cached."""
        key = epoch_millis // self._unit_ms if self._unit_ms else 0
        text = self._cache.get(key)
        if text is None:
            text = self.format(_EPOCH + dt.timedelta(milliseconds=epoch_millis))
            if len(self._cache) >= 1024:
                self._cache.clear()
            self._cache[key] = text
        return text

    def parse(self, text: str) -> dt.datetime:
        """Parse the start of ``text`` (trailing text is ignored, as Java's DateFormat.parse does)."""
        if self._parser is None:
            self._parser = re.compile(self._parse_regex(), re.IGNORECASE)
        match = self._parser.match(text)
        if match is None:
            raise ValueError(f"Unparseable date: {text!r}")
        return self._assemble(match)

    def _parse_regex(self) -> str:
        parts: list[str] = []
        for index, token in enumerate(self._tokens):
            if isinstance(token, str):
                parts.append(re.escape(token))
                continue
            letter, count = token
            group = f"(?P<g{index}>"
            nxt = self._tokens[index + 1] if index + 1 < len(self._tokens) else None
            abutting = nxt is not None and not isinstance(nxt, str) and nxt[0] in _NUMERIC
            if letter in _NUMERIC and not (letter in "ML" and count >= 3):
                # Numbers directly followed by another number must use their exact width.
                digits = rf"\d{{{count}}}" if abutting else (r"-?\d+" if letter == "y" else r"\d+")
                parts.append(group + digits + ")")
            elif letter in "ML":
                parts.append(group + "|".join(m if count >= 4 else m[:3] for m in _MONTHS) + ")")
            elif letter == "E":
                parts.append(group + "|".join(d if count >= 4 else d[:3] for d in _DAYS) + ")")
            elif letter == "a":
                parts.append(group + "AM|PM)")
            elif letter == "G":
                parts.append(group + "AD|BC)")
            elif letter == "z":
                parts.append(group + r"[A-Za-z][A-Za-z ]*?(?:[+-]\d{1,2}(?::?\d{2})?)?|[+-]\d{2}:?\d{2})")
            elif letter == "Z":
                parts.append(group + r"[+-]\d{4}|Z)")
            else:  # X
                parts.append(group + r"Z|[+-]\d{2}(?::?\d{2})?)")
        return "".join(parts)

    def _assemble(self, match: re.Match[str]) -> dt.datetime:
        year, month, day = 1970, 1, 1
        hour = minute = second = millis = 0
        pm: bool | None = None
        offset_minutes = 0
        day_of_year: int | None = None
        month_or_day_given = False
        for index, token in enumerate(self._tokens):
            if isinstance(token, str):
                continue
            letter, count = token
            text = match.group(f"g{index}")
            if letter == "y":
                year = int(text)
                if count <= 2 and len(text) == 2 and text.isdigit():
                    year = _two_digit_year(year)
            elif letter in "ML":
                month = int(text) if count < 3 else _month_number(text)
                month_or_day_given = True
            elif letter == "d":
                day = int(text)
                month_or_day_given = True
            elif letter == "D":
                day_of_year = int(text)
            elif letter in "Hk":
                hour = int(text) % 24
            elif letter in "hK":
                hour = int(text) % 12
            elif letter == "a":
                pm = text.upper() == "PM"
            elif letter == "m":
                minute = int(text)
            elif letter == "s":
                second = int(text)
            elif letter == "S":
                millis = int(text)
            elif letter in "zZX":
                offset_minutes = _offset_minutes(text)
        if pm:
            hour += 12
        if day_of_year is not None and not month_or_day_given:
            day = day_of_year
        # Lenient like SimpleDateFormat's default: out-of-range parts roll over instead of failing.
        base = dt.datetime(year + (month - 1) // 12, (month - 1) % 12 + 1, 1, tzinfo=_UTC)
        return base + dt.timedelta(
            days=day - 1,
            hours=hour,
            minutes=minute - offset_minutes,
            seconds=second,
            milliseconds=millis,
        )

    def __repr__(self) -> str:
        return f"JavaDateFormat({self.pattern!r})"


def _two_digit_year(two_digits: int) -> int:
    # SimpleDateFormat places two-digit years within 80 years before and 20 after now.
    start = dt.datetime.now(_UTC).year - 80
    year = start - start % 100 + two_digits
    return year + 100 if year < start else year


def _month_number(name: str) -> int:
    prefix = name[:3].lower()
    for number, month in enumerate(_MONTHS, start=1):
        if month[:3].lower() == prefix:
            return number
    raise ValueError(f"Unknown month {name!r}")


def _offset_minutes(text: str) -> int:
    found = re.search(r"([+-])(\d{1,2}):?(\d{2})?", text)
    if found is None:
        return 0
    sign = -1 if found.group(1) == "-" else 1
    return sign * (int(found.group(2)) * 60 + int(found.group(3) or 0))
