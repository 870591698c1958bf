"""`hwtop report`: what this box can train and what will limit it, measured and checked against the guide."""
