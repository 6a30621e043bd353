// The Circuits tab's panel beside the graph: the body of its js_on_load (toyviz.app.layout.circuits_tab reads this
// file, as toyviz.app.page reads page.css; `element` is the panel). Every graph drawn into #circuit-graph-plot gets
// two listeners: a hover writes the node's dashboard (customdata[1], toyviz.app.figures.circuits) into the panel, a
// click on a feature puts its id into #circuit-node and presses #circuit-intervene. No request for a hover.
const attach = () => {
  const graph = document.querySelector('#circuit-graph-plot .js-plotly-plot');
  if (!graph || !graph.on || graph.dataset.circuitWired === '1') return;
  graph.dataset.circuitWired = '1';
  graph.on('plotly_hover', (event) => {
    const data = event.points[0].customdata;
    const panel = element.querySelector('.circuit-panel') || element;
    if (data && data[1]) panel.innerHTML = data[1];
  });
  graph.on('plotly_click', (event) => {
    const data = event.points[0].customdata;
    const box = document.querySelector('#circuit-node textarea, #circuit-node input');
    if (!data || !box || !/^\d+_\d+_\d+$/.test(data[0])) return;
    box.value = data[0];
    box.dispatchEvent(new Event('input', {bubbles: true}));
    setTimeout(() => document.getElementById('circuit-intervene')?.click(), 50);
  });
};
new MutationObserver(attach).observe(document.body, {childList: true, subtree: true});
attach();
