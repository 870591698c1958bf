"""The config file's schema: the Structs whose annotations session.schema decodes with msgspec, and `read`, which
parses a file's TOML text into them. Imported only when a config file exists (see session/config.py)."""

from __future__ import annotations

import tomllib
from typing import Annotated, Literal

import msgspec

from hwtop.advice.rules import RULES, THRESHOLDS
from hwtop.model.panels import PANELS as PANELS  # the names `ui.hide` takes, the main screen's
from hwtop.model.panels import Panel
from hwtop.model.safe_text import printable
from hwtop.session.config_error import ConfigError
from hwtop.session.schema import Names, Range, parse

Theme = Literal["dark", "light", "mono"]
MAX_INTERVAL_S = 3600.0  # as the command line's --interval
MAX_HOLD_S = 3600.0
UNIT_WORDS = {"%": "a percentage", "fraction": "a fraction", "x": "a ratio", "B": "a number of bytes",
              "B/s": "a number of bytes per second"}

THRESHOLD_NAMES = Names("advice threshold", {
    name: Range(*entry.bounds, what=UNIT_WORDS.get(entry.unit, f"a number of {entry.unit}"))
    for name, entry in THRESHOLDS.items()})
RULE_NAMES = Names("rule", {rule.id: Range(0.0, MAX_HOLD_S, what="a number of seconds") for rule in RULES})


INTERVAL = Range(0.0, MAX_INTERVAL_S, low_open=True, what="a number of seconds")


class UiTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    interval: Annotated[float, INTERVAL.meta(), INTERVAL] | None = None
    theme: Theme | None = None
    hide: tuple[Panel, ...] = ()


class AdviceTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    thresholds: Annotated[dict[str, float], THRESHOLD_NAMES] = msgspec.field(default_factory=dict)
    hold_s: Annotated[dict[str, float], RULE_NAMES] = msgspec.field(default_factory=dict)


class ConfigFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    ui: UiTable = msgspec.field(default_factory=UiTable)
    advice: AdviceTable = msgspec.field(default_factory=AdviceTable)


def read(text: str, path: str) -> ConfigFile:
    """The file's TOML text, checked against the schema. ConfigError names the file and what is wrong."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{printable(path)}: {error}") from None
    try:
        return parse(ConfigFile, document)
    except ConfigError as error:
        raise ConfigError(f"{printable(path)}: {error}") from None
