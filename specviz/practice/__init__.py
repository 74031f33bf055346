"""Practice: drills generated from formulas and from the live model's traces (drills.py), and the learner's
progress kept in SQLite (progress.py). No Streamlit here: the pages and the CLI use both."""
