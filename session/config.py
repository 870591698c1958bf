"""The config file (~/.config/hwtop/config.toml, or --config FILE): the refresh interval, the theme, panels to
hide, and the advice thresholds. The command line wins over the file.

    [ui]
    interval = 0.5             # seconds, more than 0 and at most 3600
    theme = "light"            # dark | light | mono (mono also when NO_COLOR is set)
    hide = ["disks"]           # any of: cpu memory disks gpu network advice processes

    [advice.thresholds]        # names and units: advice/thresholds.py; a percentage 0-100, a fraction 0-1
    data_wait_fraction = 0.4
    [advice.hold_s]            # per rule id, seconds from 0 to 3600
    gpu-starved = 10

Its schema is the msgspec Structs of session/config_file.py, decoded by session.schema and imported only when a
file exists: a wrong type, a value out of range, an unknown key, threshold or rule is refused with one line naming the
key and what it allows. Like ssh with its config, a file
someone else could have written is refused too: it must be owned by the user running hwtop (or root) and not be
writable by group or others, since it steers what hwtop runs and shows, often as root."""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass, field

from hwtop.advice.thresholds import Thresholds
from hwtop.model.safe_text import printable
from hwtop.session.config_error import ConfigError

__all__ = ["THEMES", "Config", "ConfigError", "default_path", "load", "read_trusted"]

THEMES: dict[str, str] = {"dark": "textual-dark", "light": "textual-light", "mono": "textual-dark"}
MAX_BYTES = 1 << 20  # a config file larger than this is not one


@dataclass(slots=True)
class Config:
    thresholds: Thresholds = field(default_factory=Thresholds)
    interval: float | None = None
    theme: str | None = None
    hide: tuple[str, ...] = ()
    path: str | None = None


def default_path() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "hwtop", "config.toml")


def load(path: str | None) -> Config:
    """The config of `path` (which must exist), or of the default path when it exists. ConfigError (a ValueError)
    names the file and what is wrong, in one line."""
    given = path is not None
    path = path or default_path()
    text = read_trusted(path, must_exist=given)
    if text is None:
        return Config()
    from hwtop.session.config_file import read  # the schema, TOML and the rules' names: only for a file

    config = read(text, path)
    ui, advice = config.ui, config.advice
    return Config(Thresholds(advice.thresholds, advice.hold_s), ui.interval, ui.theme, ui.hide, path)


def read_trusted(path: str, must_exist: bool) -> str | None:
    """The file's text, if it is a regular file owned by this user or root and writable by no one else; None when
    it does not exist and need not. Checked on the opened file, so what is checked is what is read."""
    shown = printable(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO does not block
    except FileNotFoundError:
        if must_exist:
            raise ConfigError(f"config file not found: {shown}") from None
        return None
    except OSError as error:
        raise ConfigError(f"cannot read config file {shown}: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        refusal = _refusal(info)
        if refusal:
            raise ConfigError(f"refusing config file {shown}: {refusal}")
        content = _read_at_most(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(content) > MAX_BYTES:
        raise ConfigError(f"refusing config file {shown}: larger than {MAX_BYTES >> 20} MiB")
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{shown}: not UTF-8 text (byte {error.start})") from None


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _refusal(info: os.stat_result) -> str | None:
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    me = os.geteuid()
    if info.st_uid not in (me, 0):
        return f"owned by {_user(info.st_uid)}, not by {'root' if me == 0 else f'{_user(me)} or root'}"
    writable = [who for who, bit in (("group", stat.S_IWGRP), ("others", stat.S_IWOTH)) if info.st_mode & bit]
    if writable:
        return f"writable by {' and '.join(writable)} (chmod go-w to use it)"
    return None


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"
