"""Tab renderers, one module per tab as toyviz.app.figures has one per tab: plain functions, inputs → (note,
figures …).

The app binds each of these to its tab's controls and a named HTTP endpoint (toyviz.app.tabs); tests and
tools call them directly, with no Gradio. Every input arrives as the browser or the API sent it: each
renderer clamps or checks it (toyviz.settings.controls, Explorer) before a model sees it, and a user's mistake
raises `UserError` with a message meant for the page. The figure-returning outputs are plotly figures;
text outputs are Markdown or HTML strings. The words the tabs show live in `text`.
"""
