"""Practice: drills generated from formulas (formula_drills.py) and from the live model's traces (live_drills.py),
registered and made in drills.py and graded in drill_grading.py, and the learner's progress kept in SQLite
(progress.py). No Streamlit here: the pages and the CLI use both."""
