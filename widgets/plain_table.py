"""A DataTable whose cells are data. Textual parses a `str` cell as markup (a process named `[/x]` raised
MarkupError, one named `[@click=...]` became a clickable action); here every cell that is not already `Text`
becomes `Text` through `safe_text.data`, and a `Text` cell has its control characters shown. The process table
and the fleet tables use it, so nothing that enters them can be read as markup or reach the terminal as a
control sequence."""

from __future__ import annotations

from typing import Any

from rich.text import TextType
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from hwtop.widgets.safe_text import cell

SCROLL_COLUMNS = 8  # cells a left/right key scrolls a row-cursor table by


class PlainTable(DataTable[Any]):
    def action_cursor_left(self) -> None:
        """With a row cursor, left and right scroll the columns (a narrow terminal's last ones are past the edge);
        with a cell cursor they move it, as DataTable does."""
        if self.cursor_type == "row":
            self.scroll_relative(x=-SCROLL_COLUMNS, animate=False)
        else:
            super().action_cursor_left()

    def action_cursor_right(self) -> None:
        if self.cursor_type == "row":
            self.scroll_relative(x=SCROLL_COLUMNS, animate=False)
        else:
            super().action_cursor_right()

    def add_row(self, *cells: Any, height: int | None = 1, key: str | None = None,
                label: TextType | None = None) -> RowKey:
        return super().add_row(*(cell(value) for value in cells), height=height, key=key,
                               label=None if label is None else cell(label))

    def update_cell(self, row_key: RowKey | str, column_key: ColumnKey | str, value: Any, *,
                    update_width: bool = False) -> None:
        super().update_cell(row_key, column_key, cell(value), update_width=update_width)
