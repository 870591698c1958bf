"""The Textual apps (the monitor's, the fleet's), their screens and styles: thin, each screen shows a Frame to the
widgets. The keys are declared in widgets/keys.py, the command line is cli/."""
