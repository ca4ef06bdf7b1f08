"""Configuration layer: the line of every key in a TOML document. Imports the stdlib only.

tomllib returns plain dicts without positions, so an error about a value could
not say where the value is. :func:`key_lines` scans the source once more and
records the 1-based line where each key path is first written, knowing:

* ``[a.b]`` table headers and ``[[a]]`` array-of-tables headers, the latter
  numbered (``("listeners", 1, "port")`` is the port of the second
  ``[[listeners]]``), including ``[a.b]`` under the latest ``[[a]]``;
* dotted keys (``limits.max_qos = 1``) and quoted keys;
* inline tables and arrays, over several lines;
* strings, multi-line strings and comments, whose contents are skipped.

The scanner trusts that tomllib has already accepted the document: it is lenient
rather than a second parser, and never loops on odd input.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping

__all__ = ["KeyPath", "key_lines", "line_of"]

#: A key's place in the document: names, and indexes into arrays.
KeyPath = tuple[str | int, ...]

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_SCALAR_END = frozenset(",]}#\r\n")


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map every key path written in ``text`` (and its prefixes) to its first line."""
    return _Scanner(text).scan()


def line_of(lines: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    """The line of ``path``, else of its longest prefix written in the file, else None."""
    for end in range(len(path), 0, -1):
        found = lines.get(path[:end])
        if found is not None:
            return found
    return None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.lines: dict[KeyPath, int] = {}
        self.arrays: dict[KeyPath, int] = {}  # array of tables -> index of its last table

    # -- low level ---------------------------------------------------------

    def eof(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def advance(self, count: int = 1) -> None:
        end = min(self.pos + count, len(self.text))
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def skip_blank(self, newlines: bool) -> None:
        """Skip spaces, tabs, comments and (if ``newlines``) line breaks."""
        while not self.eof():
            char = self.peek()
            if char in " \t" or (newlines and char in "\r\n"):
                self.advance()
            elif char == "#":
                stop = self.text.find("\n", self.pos)
                self.advance((len(self.text) if stop < 0 else stop) - self.pos)
            else:
                return

    def mark(self, path: KeyPath) -> None:
        for end in range(1, len(path) + 1):
            self.lines.setdefault(path[:end], self.line)

    # -- structure ---------------------------------------------------------

    def scan(self) -> dict[KeyPath, int]:
        table: KeyPath = ()
        while True:
            self.skip_blank(newlines=True)
            if self.eof():
                return self.lines
            start = self.pos
            if self.at("[["):
                self.advance(2)
                key = self.key()
                full = (*self.resolve(key[:-1]), *key[-1:])
                index = self.arrays.get(full, -1) + 1
                self.arrays[full] = index
                table = (*full, index)
                self.mark(table)
                self.advance(2)
            elif self.at("["):
                self.advance(1)
                table = self.resolve(self.key())
                self.mark(table)
                self.advance(1)
            else:
                self.key_value(table)
            if self.pos == start:
                self.advance(1)

    def resolve(self, key: KeyPath) -> KeyPath:
        """Insert the index of the latest table after each array-of-tables prefix."""
        out: KeyPath = ()
        for part in key:
            out = (*out, part)
            if out in self.arrays:
                out = (*out, self.arrays[out])
        return out

    def key_value(self, table: KeyPath) -> None:
        key = self.key()
        if not key:
            return
        path = (*table, *key)
        self.mark(path)
        self.skip_blank(newlines=False)
        if self.at("="):
            self.advance(1)
            self.skip_blank(newlines=False)
            self.value(path)

    def key(self) -> KeyPath:
        parts: list[str | int] = []
        while True:
            self.skip_blank(newlines=False)
            char = self.peek()
            if char == '"':
                parts.append(self.decode(self.basic_string()))
            elif char == "'":
                parts.append(self.decode(self.literal_string()))
            else:
                start = self.pos
                while not self.eof() and self.peek() in _BARE:
                    self.advance()
                if self.pos == start:
                    return tuple(parts)
                parts.append(self.text[start:self.pos])
            self.skip_blank(newlines=False)
            if not self.at("."):
                return tuple(parts)
            self.advance(1)

    @staticmethod
    def decode(quoted: str) -> str:
        try:
            value = tomllib.loads(f"k = {quoted}")["k"]
        except tomllib.TOMLDecodeError:
            return quoted
        return value if isinstance(value, str) else quoted

    # -- values ------------------------------------------------------------

    def value(self, path: KeyPath) -> None:
        if self.at('"""') or self.at("'''"):
            self.multiline_string()
        elif self.at('"'):
            self.basic_string()
        elif self.at("'"):
            self.literal_string()
        elif self.at("["):
            self.array(path)
        elif self.at("{"):
            self.inline_table(path)
        else:
            while not self.eof() and self.peek() not in _SCALAR_END:
                self.advance()

    def array(self, path: KeyPath) -> None:
        self.advance(1)
        index = 0
        while True:
            self.skip_blank(newlines=True)
            if self.eof() or self.at("]"):
                self.advance(1)
                return
            start = self.pos
            self.mark((*path, index))
            self.value((*path, index))
            index += 1
            self.skip_blank(newlines=True)
            if self.at(","):
                self.advance(1)
            elif self.pos == start:
                self.advance(1)

    def inline_table(self, path: KeyPath) -> None:
        self.advance(1)
        while True:
            self.skip_blank(newlines=True)
            if self.eof() or self.at("}"):
                self.advance(1)
                return
            start = self.pos
            self.key_value(path)
            self.skip_blank(newlines=True)
            if self.at(","):
                self.advance(1)
            elif self.pos == start:
                self.advance(1)

    def basic_string(self) -> str:
        start = self.pos
        self.advance(1)
        while not self.eof() and self.peek() not in '"\n':
            self.advance(2 if self.peek() == "\\" else 1)
        self.advance(1)
        return self.text[start:self.pos]

    def literal_string(self) -> str:
        start = self.pos
        stop = self.text.find("'", self.pos + 1)
        self.advance((len(self.text) if stop < 0 else stop + 1) - self.pos)
        return self.text[start:self.pos]

    def multiline_string(self) -> None:
        delimiter = self.text[self.pos:self.pos + 3]
        escapes = delimiter == '"""'
        self.advance(3)
        while not self.eof():
            if escapes and self.peek() == "\\":
                self.advance(2)
            elif self.at(delimiter):
                self.advance(3)
                # Up to two quotes may close the content right before the delimiter.
                for _ in range(2):
                    if self.at(delimiter[0]):
                        self.advance(1)
                return
            else:
                self.advance(1)
