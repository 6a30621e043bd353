"""The web app's parts, testable without a browser: the explorer (models and caches), tab renderers
(views), the tab table (tabs), control ranges, deep links, Gradio widgets, and the figure builders."""
