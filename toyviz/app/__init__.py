"""The web app's parts, testable without a browser: what the app holds (loaded: the models; caches;
explorer: the prompt-level methods the tabs call), the tab renderers (views), the tab table (tabs),
each tab's Gradio layout (layout), Gradio widgets, the figure builders (figures/), and the in-browser
GPT's panel (browser_model). The controls' ranges and the deep links are below the app, in toyviz.settings."""
