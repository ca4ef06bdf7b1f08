"""The key -> line scanner that gives tomllib's results their positions."""

from __future__ import annotations

import tomllib

from hypothesis import given, settings
from hypothesis import strategies as st

from actorbroker.config.locate import KeyPath, key_lines, line_of

TRICKY = '''\
# [limits] in a comment, max_qos = 1
title = """
[limits]
max_qos = 2 \\""" still inside
"""
'quoted key' = 'it"s'  # 6
"dotted.\\"q\\"" = 1
a.b . c = { d = 1, e = [1,
  2, { f = "]" }] }
[ limits ]  # 10
max_qos = 1
  max_keepalive = 60
lines = [
  "[not_a_table]",
  """x = 1
y = 2""",
]
[[listeners]]  # 18
port = 1
[listeners.tls]
cert = "a"
[[listeners]]  # 22
port = 2
[[listeners]]
[listeners.tls]  # 25
cert = \'\'\'
[[listeners]]\'\'\'
[sys]
interval = 0
'''


def test_tricky_document() -> None:
    tomllib.loads(TRICKY)  # the scanner is only asked about valid documents
    lines = key_lines(TRICKY)
    expected: dict[KeyPath, int] = {
        ("title",): 2,
        ("quoted key",): 6,
        ('dotted."q"',): 7,
        ("a",): 8, ("a", "b"): 8, ("a", "b", "c", "d"): 8, ("a", "b", "c", "e", 2, "f"): 9,
        ("limits",): 10, ("limits", "max_qos"): 11, ("limits", "max_keepalive"): 12,
        ("limits", "lines", 1): 15,
        ("listeners", 0): 18, ("listeners", 0, "port"): 19,
        ("listeners", 0, "tls", "cert"): 21,
        ("listeners", 1): 22, ("listeners", 1, "port"): 23,
        ("listeners", 2, "tls"): 25, ("listeners", 2, "tls", "cert"): 26,
        ("sys", "interval"): 29,
    }
    assert {path: lines.get(path) for path in expected} == expected
    assert ("not_a_table",) not in lines and ("listeners", 3) not in lines


def test_line_of_falls_back_to_the_longest_written_prefix() -> None:
    lines = key_lines("[limits]\nmax_qos = 1\n")
    assert line_of(lines, ("limits", "max_qos")) == 2
    assert line_of(lines, ("limits", "nope")) == 1
    assert line_of(lines, ("node", "name")) is None
    assert line_of(lines, ()) is None


def test_crlf_and_odd_input_terminate() -> None:
    assert key_lines("[a]\r\nb = 1\r\n\r\nc = 2\r\n") == {
        ("a",): 1, ("a", "b"): 2, ("a", "c"): 4,
    }
    # Not TOML at all: the scanner must still return, whatever it finds.
    for junk in ("[", "[[", "= = =", '"', "'''", 'a = """', "a = [", "a = {", "]]]", "\\"):
        key_lines(junk)


# -- generated documents ---------------------------------------------------

_VALUES = st.sampled_from([
    "1", "-2.5", "true", "1979-05-27T07:32:00Z", '"x = [y] # z"', "'lit # [t]'",
    '"""\n[fake]\nk = 1\n"""', "'''\n[[fake]]\n'''", "[\n  1,\n  # ] c\n  2,\n]",
    '{ p = "}", q = [1, 2] }', '"""a ""\\"""" ',
])
_FILLER = st.sampled_from(["", "# [x] y = 1", "   ", "# k = '''"])


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, dict[KeyPath, int]]:
    """A valid TOML document and the line where each of its keys is written."""
    out: list[str] = []
    expected: dict[KeyPath, int] = {}

    def emit(text: str) -> int:
        out.append(text)
        return sum(part.count("\n") + 1 for part in out[:-1]) + 1

    def entries(table: KeyPath) -> None:
        count = draw(st.integers(0, 3))
        for i in range(count):
            if draw(st.booleans()):
                emit(draw(_FILLER))
            dotted = draw(st.booleans())
            key: KeyPath = (f"p{i}", f"k{i}") if dotted else (f"k{i}",)
            written = ".".join(f'"{k}"' if draw(st.booleans()) else k for k in key)
            expected[(*table, *key)] = emit(f"{written} = {draw(_VALUES)}")

    entries(())
    kinds = draw(st.lists(st.sampled_from(["table", "array", "array+sub"]), max_size=5))
    arrays: dict[str, int] = {}
    for n, kind in enumerate(kinds):
        if kind == "table":
            path: KeyPath = (f"t{n}",)
            expected[path] = emit(f"[t{n}]")
        else:
            name = f"a{draw(st.integers(0, 1))}"
            index = arrays[name] = arrays.get(name, -1) + 1
            path = (name, index)
            expected[path] = emit(f"[[{name}]]")
        entries(path)
        if kind == "array+sub":
            path = (*path, "sub")
            expected[path] = emit(f"[ {path[0]} . sub ]")
            entries(path)
    return "\n".join(out) + "\n", expected


@settings(max_examples=300, deadline=None)
@given(documents())
def test_generated_documents(document: tuple[str, dict[KeyPath, int]]) -> None:
    text, expected = document
    tomllib.loads(text)
    lines = key_lines(text)
    assert {path: lines.get(path) for path in expected} == expected
