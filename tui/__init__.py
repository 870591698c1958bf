"""The Textual app, its screens and styles, key bindings and the `hwtop` command line."""
