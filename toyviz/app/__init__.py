"""The web app's parts, testable without a browser: what the app holds (loaded: the models; caches;
explorer: the prompt-level methods the tabs call), the tab renderers (views), the tab table (tabs),
each tab's Gradio layout (layout), Gradio widgets, the figure builders (figures/), and the in-browser
GPT's panel (browser_model). The controls' ranges and the deep links are below the app, in toyviz.settings."""

from toyviz.serving.gradio_import import skip_stubs

# before any of the app's modules imports Gradio: its import no longer writes type stubs for editors (2.4 of its
# 4.9 CPU seconds on 2 cores, before `toyviz serve`'s page can answer)
skip_stubs()
