"""Projector mode's page script (issue 55): a layout for projecting, where the figure is the first screen.

page.css lays the page out (`body.projector`): the header one line, the tabs one row that scrolls sideways, a tab's
explanation under its figures. This script does what a style sheet cannot:

- each figure is sized to the screen it is on: as Gradio hands a figure to plotly (`Plotly.react`), a figure taller
  than the room below its top on the first screen is drawn that tall (the first figure of a tab fills the rest of
  the first screen, wherever it starts: under a lesson's bar too), one further down at most a screen's height: zoomed, its text, margins and markers in proportion
  with its height, never below SMALLEST of it (its text then a laptop's size, or larger). Zoomed alike, no two of its
  texts meet that did not (tests/test_browser_truth; text shrunk less than the height made tick labels run into the
  subplot titles of Inside a head and the row names of Layer norm). Its layout is changed before the one drawing, so
  nothing is drawn twice; the server's figure (its export, its download) keeps its own height. In a lesson a
  question's figures are drawn covered, and Reveal grows the bar above them (the votes, the answer): revealed, the
  tab's figures are fitted again to the room they then have (drawn once more, as the cover goes);
- the tab on screen is scrolled into the tab row's view (a link to the Model tab shows its tab);
- "⋯" in the header shows the tools the one line leaves out (Copy link, Export HTML, Lessons).

Installed once, by the header's "⋯" (layout.header, its js_on_load), before any figure is drawn.
"""
from __future__ import annotations

FLOOR = 0.5           # a figure whose top is further down than half the screen gets a whole screen when scrolled to
LEAST = 300           # px: no figure is squeezed below this
SMALLEST = 0.6        # nor below this share of its own height: its text then at least a laptop's (projector text is 1.7×)

MORE = ('<button type="button" class="tv-more" title="Copy link, Export HTML, Lessons" '
        'aria-label="More: copy link, export, lessons" aria-expanded="false">⋯</button>')

PAGE_SCRIPT = """
element.addEventListener('click', (event) => {
    const button = event.target.closest('.tv-more');
    if (!button) return;
    const open = document.body.classList.toggle('header-open');
    button.setAttribute('aria-expanded', String(open));
});
if (!window.toyvizProjector) {
    window.toyvizProjector = true;
    const FLOOR = %(floor)s, LEAST = %(least)s, SMALLEST = %(smallest)s;
    // the tab's first figure shown: the one the first screen is for
    const first = (gd) => {
        const tab = gd.closest('.tabitem');
        const plots = tab ? [...tab.querySelectorAll('[id$="-plot"]')].filter((e) => e.offsetParent !== null) : [];
        return plots.length > 0 && plots[0].contains(gd);
    };
    // the room for a figure about to be drawn: below its top on the first screen (the tab's first figure, or one
    // starting above FLOOR), or one screen
    const room = (gd) => {
        const top = gd.getBoundingClientRect().top + window.scrollY, screen = window.innerHeight;
        const below = screen - top - 12;
        return Math.max(LEAST, Math.floor(below >= FLOOR * screen || first(gd) ? below : screen - 24));
    };
    // every text size and marker size of a figure (and of its template and traces) times k, its height's ratio:
    // the figure zoomed, its titles, gaps and points in proportion (a figure laid out for its height keeps its look)
    const FONTS = /font$/i;
    const scaled = (size, r) => Array.isArray(size) ? size.map((s) => typeof s === 'number' ? s * r : s)
        : typeof size === 'number' ? size * r : size;
    const shrink = (node, k, depth) => {
        if (!node || typeof node !== 'object' || depth > 8) return;
        if (Array.isArray(node)) { node.forEach((item) => shrink(item, k, depth + 1)); return; }
        for (const [key, value] of Object.entries(node)) {
            if (FONTS.test(key) && value && typeof value === 'object' && typeof value.size === 'number')
                value.size = Math.round(value.size * k * 10) / 10;
            else if (key === 'marker' && value && typeof value === 'object' && 'size' in value)
                value.size = scaled(value.size, k);
            if (value && typeof value === 'object' && !ArrayBuffer.isView(value) && key !== 'z' && key !== 'x'
                && key !== 'y' && key !== 'customdata' && key !== 'text') shrink(value, k, depth + 1);
        }
    };
    const fit = (gd, data, layout) => {
        if (!document.body.classList.contains('projector') || !layout || !(layout.height > 0)) return;
        if (!gd.closest || !gd.closest('[id$="-plot"]')) return;
        // covered by a lesson's question: kept as given, to be fitted again when revealed (`refit`)
        if (document.body.classList.contains('lesson-hides'))
            gd.toyvizGiven = JSON.parse(JSON.stringify({data, layout}));
        // the attribution graph is pointed at, node by node: squeezed, a layer's nodes at one position covered
        // each other and a hover found the wrong one (its width, not its height, sets how far apart they stand)
        if (gd.closest('#circuit-graph-plot')) return;
        const height = layout.height, target = Math.max(room(gd), Math.round(SMALLEST * height));
        if (height <= target) return;
        const k = target / height;
        layout.height = target;
        if (layout.margin) for (const side of ['l', 'r', 't', 'b'])
            if (typeof layout.margin[side] === 'number') layout.margin[side] = Math.round(layout.margin[side] * k);
        shrink(layout, k, 0);
        shrink(data, k, 0);
    };
    const patch = (plotly) => {
        if (!plotly || plotly.toyvizFits || typeof plotly.react !== 'function') return plotly;
        const react = plotly.react;
        try {
            plotly.react = function (gd, data, layout, config) {
                try { fit(gd, data, layout); } catch (err) { /* a figure drawn at its own height */ }
                return react.apply(this, arguments);
            };
            plotly.toyvizFits = true;
        } catch (err) { /* read-only: figures keep their height */ }
        return plotly;
    };
    // Reveal: the figures drawn covered, fitted again below the bar as it now stands
    const refit = () => {
        if (document.body.classList.contains('lesson-hides') || !window.Plotly) return;
        for (const gd of document.querySelectorAll('.js-plotly-plot')) {
            const given = gd.toyvizGiven;
            if (!given || gd.offsetParent === null) continue;
            delete gd.toyvizGiven;
            window.Plotly.react(gd, given.data, given.layout);
        }
    };
    new MutationObserver(refit).observe(document.body, {attributes: true, attributeFilter: ['class']});
    if (window.Plotly) patch(window.Plotly);
    else {
        let held;
        Object.defineProperty(window, 'Plotly', {configurable: true, enumerable: true,
            get: () => held, set: (value) => { held = patch(value); }});
    }
    // the selected tab in the tab row's view: the row scrolls sideways on a projector
    const follow = () => {
        const list = document.querySelector('#tabs [role=tablist]');
        if (!list) { setTimeout(follow, 200); return; }
        const show = () => {
            const tab = list.querySelector('[role=tab][aria-selected=true]');
            if (!tab || list.scrollWidth <= list.clientWidth) return;
            const box = list.getBoundingClientRect(), at = tab.getBoundingClientRect();
            const left = at.left - box.left + list.scrollLeft, right = left + at.width;
            if (left < list.scrollLeft || right > list.scrollLeft + list.clientWidth)
                list.scrollLeft = Math.max(0, left - (list.clientWidth - at.width) / 2);
        };
        new MutationObserver(show).observe(list, {subtree: true, attributes: true, attributeFilter: ['aria-selected']});
        new MutationObserver(show).observe(document.body, {attributes: true, attributeFilter: ['class']});
        show();
    };
    follow();
}
""" % {"floor": FLOOR, "least": LEAST, "smallest": SMALLEST}
