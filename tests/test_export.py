import plotly.graph_objects as go

from toyviz.app.figures import standalone_html, style


def test_standalone_html_embeds_plotly_once_and_keeps_filenames():
    figs = [style(go.Figure(go.Bar(y=[1, 2])), f"figure {i}", filename=f"toyviz-test-{i}") for i in range(3)]
    page = standalone_html(figs, "toyviz — test <tab>")
    assert page.count("Plotly.newPlot") == 3
    assert page.count("plotly.js v") <= 2                      # the library is inlined once, not per figure
    assert "toyviz-test-2" in page and '"scale": 2' in page
    assert "&lt;tab&gt;" in page                               # the title is escaped
