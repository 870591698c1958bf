"""`python -m screenshots.regenerate` remakes the screenshots."""
