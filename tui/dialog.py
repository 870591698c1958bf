"""One keyboard convention for every hwtop dialog and pop-up screen: the first field has the focus when it opens,
escape cancels (dismisses with None), enter confirms. Subclasses say what confirming means in `confirm`; an
information screen (help, advice, report) has nothing to confirm, so enter closes it like escape."""

from __future__ import annotations

from typing import TypeVar

from textual import events, on
from textual.actions import SkipAction
from textual.screen import ModalScreen
from textual.widgets import Button, Select

from hwtop.widgets import keys

ResultType = TypeVar("ResultType")


class Dialog(ModalScreen[ResultType]):
    BINDINGS = keys.bindings(keys.DIALOG)

    @on(events.Mount)
    def _focus_first_on_mount(self) -> None:  # a handler of its own: a subclass's on_mount does not replace it
        self.focus_first()

    def focus_first(self) -> None:
        """The first widget that takes the focus, in the order the dialog shows them."""
        first = next((widget for widget in self.query("*") if widget.focusable), None)
        if first is not None:
            first.focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_confirm(self) -> None:
        focused = self.focused
        if isinstance(focused, Button) or any(select.expanded for select in self.query(Select)):
            raise SkipAction  # a focused button presses itself; an open list picks its entry
        self.confirm()

    def confirm(self) -> None:
        """What enter does; by default it closes, as escape does."""
        self.dismiss(None)
