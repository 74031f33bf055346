"""The Streamlit layer shared by app.py and pages/: sidebar, model cache, step controls. The only
package besides app.py and pages/ that imports Streamlit."""
