"""Where the command line finds the fleet's app (tui/fleet/ holds it and its screens)."""

from hwtop.tui.fleet.app import FleetApp

__all__ = ["FleetApp"]
