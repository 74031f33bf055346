"""The step pages' "Export this run as a lesson" (issue 40): the whole recorded run as one offline HTML file
(specviz.lesson), offered for download. One expander for the four step pages."""
import streamlit as st

from specviz.errors import SpecVizError
from specviz.figures import md_escape
from specviz.lesson import lesson_page


def export_lesson(name: str, method: str, params, replays: list, views, prompt: str, settings: dict) -> None:
    """name: the page's key prefix; replays: the page's replays whose whole runs the lesson needs (recorded to the
    end first); views(): specviz.lesson's views of those runs; settings: shown in the file, escaped there."""
    with st.expander("Export this run as a lesson: one HTML file that steps offline, no Python needed"):
        st.caption("The whole run with every chart of this page, the prompt and settings, and the same Step / Back / "
                   "Play keys, in one file (2–3 MB for 64 tokens) that opens in any browser without a network. "
                   f"`python -m specviz export --method {method} --prompt … --out lesson.html` makes the same from the "
                   "command line.")
        if st.button("Prepare the lesson", key=f"{name}_export"):
            with st.spinner("Recording the whole run…"):
                try:
                    for replay in replays:
                        replay.recording.fetch_until(10_000)
                    st.session_state[f"{name}_lesson"] = (params, lesson_page(method, views(), prompt, settings))
                except SpecVizError as e:
                    st.error(md_escape(str(e)))
        saved = st.session_state.get(f"{name}_lesson")
        if saved and saved[0] == params:
            st.download_button(f"Download lesson.html ({len(saved[1].encode()) / 1e6:.1f} MB)", saved[1],
                               file_name=f"specviz_{method}_lesson.html", mime="text/html", key=f"{name}_lesson_dl",
                               on_click="ignore")
