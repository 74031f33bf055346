"""Figure builders: pure functions, trace events in, Plotly figures out. No model calls, no Streamlit."""
import html

KEPT, FINISHED, PRUNED = "#2e7d32", "#f9a825", "#b0b0b0"
ACCEPTED, REJECTED, RESAMPLED, BONUS, CORRECTION = "#2e7d32", "#c62828", "#6a1b9a", "#1565c0", "#ef6c00"
P_COLOR, Q_COLOR = "#1565c0", "#ef6c00"


def label_plain(text: str) -> str:
    """Token text with whitespace made visible (newline ↵, tab ⇥, a token of spaces ␣), not escaped."""
    shown = text.replace("\n", "↵").replace("\t", "⇥")
    if shown.strip() == "":
        shown = shown.replace(" ", "␣") or "∅"
    return shown


def label(text: str) -> str:
    """Token text made safe and visible in a chart: Plotly renders a subset of HTML in text, so
    escape it, and show whitespace that would otherwise be invisible."""
    return html.escape(label_plain(text), quote=False)


_MD_SPECIAL = set("\\`*_{}[]()#+-.!<>|~$")


def md_escape(text: str) -> str:
    """Model or user text inside a Markdown string: every Markdown/HTML metacharacter backslashed, so
    `<img onerror=...>` or `[x](javascript:...)` shows as the characters typed."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)
