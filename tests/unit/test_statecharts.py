"""docs/statecharts/ must be regenerated whenever a transition table changes."""

from __future__ import annotations

import shutil
from enum import Enum
from pathlib import Path

import pytest

from actorbroker import statecharts


def test_every_chart_is_current() -> None:
    stale = statecharts.stale_files()
    assert stale == [], (
        f"stale statecharts {stale}: run `make statecharts` and commit docs/statecharts/"
    )


def test_every_state_is_drawn_and_reachable() -> None:
    for chart in statecharts.charts():
        dot = statecharts.render_dot(chart)
        states = set(type(chart.initial))
        reached = {chart.initial}
        frontier = [chart.initial]
        while frontier:
            current = frontier.pop()
            for (source, _event), target in chart.transitions.items():
                if source is current and target not in reached:
                    reached.add(target)
                    frontier.append(target)
        assert reached == states, f"{chart.name}: unreachable {states - reached}"
        for state in states:
            assert f'"{state.name}"' in dot


class _Light(Enum):
    OFF = 1
    ON = 2


def _toy_chart() -> statecharts.Chart:
    return statecharts.Chart(
        name="toy",
        title="toy",
        initial=_Light.OFF,
        transitions={(_Light.OFF, "push"): _Light.ON, (_Light.ON, "push"): _Light.OFF},
    )


def test_a_changed_table_is_detected_as_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toy = _toy_chart()
    monkeypatch.setattr(statecharts, "charts", lambda: [toy])
    (tmp_path / "toy.dot").write_text(statecharts.render_dot(toy))
    stamp = statecharts.dot_digest(statecharts.render_dot(toy))
    (tmp_path / "toy.svg").write_text(f"<svg>{statecharts._HASH_MARK}{stamp} --></svg>")
    assert statecharts.stale_files(tmp_path) == []

    changed = statecharts.Chart(
        name="toy", title="toy", initial=_Light.OFF,
        transitions={**toy.transitions, (_Light.ON, "cut"): _Light.OFF},
    )
    monkeypatch.setattr(statecharts, "charts", lambda: [changed])
    assert statecharts.stale_files(tmp_path) == ["toy.dot", "toy.svg"]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_svg_is_rendered_and_stamped() -> None:
    dot = statecharts.render_dot(_toy_chart())
    svg = statecharts.render_svg(dot)
    assert "<svg" in svg and statecharts.dot_digest(dot) in svg
