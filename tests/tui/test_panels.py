"""The main screen's one list of panels (tui/panels.py) is what the screen composes, the row budget shares out,
the stylesheet borders and the config file hides: a panel added to the list is in all four, and nothing else
names the panels again."""

from __future__ import annotations

from hwtop.model.panels import PANELS
from hwtop.tui import layout
from hwtop.tui.app import HwtopApp
from hwtop.tui.panels import NAMES, SLOTS
from tests.factories import ScriptedSource
from tests.tui.screens import story_snapshots


def test_the_give_way_orders_and_the_config_name_the_lists_panels() -> None:
    assert sorted(layout.FOLD_ORDER) == sorted(NAMES)
    assert set(layout.LEAST_ORDER) == set(NAMES) - {layout.FILLS}  # the table never goes below its least
    assert {slot.name for slot in SLOTS if slot.hideable} == set(PANELS) == set(NAMES) - {"workload"}
    assert set(layout.TOP_LEFT + layout.TOP_RIGHT + layout.BELOW) == set(NAMES)


async def test_the_screen_composes_the_list_in_its_places_each_with_the_panel_border() -> None:
    app = HwtopApp(ScriptedSource(story_snapshots("dgx-a100", seconds=10.0, step=5.0)), interval=3600.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        panels = app.main.panels
        assert set(panels) == set(NAMES)  # the story's workload made with its first frame
        assert [p.id for p in app.query_one("#left").children] == list(layout.TOP_LEFT)
        below = [w.id for w in app.main.children if w.id in layout.BELOW]
        assert below == list(layout.BELOW)
        for slot in SLOTS:
            panel = panels[slot.name]
            assert panel.id == slot.name and panel.region.height >= 1, slot.name
            if slot.name != "processes":  # the table is drawn by its own rule (hwtop.tcss)
                bare = panel.has_class("empty") or panel.has_class("quiet")  # one line that names itself
                assert panel.has_class("panel") and panel.styles.border_top[0] == ("" if bare else "round"), \
                    slot.name
