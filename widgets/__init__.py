"""Textual widgets that are given data and render it; they never fetch it."""
