"""The Circuits tab: the attribution graph of one prediction (toyviz.interpret.circuits), drawn by layer and
position, each feature's dashboard on hover (shipped with the figure: no request), a feature clicked to ablate or
steer in the real GPT beside what the graph predicted, features grouped by hand into supernodes (kept in the link),
and how much of it the error nodes carry, said in words. `circuit_json` is the HTTP endpoint's graph: the JSON
`python -m toyviz.circuits` writes (Neuronpedia's schema, docs/circuits.md).
"""
from __future__ import annotations

import re

from toyviz.app.explorer import Explorer
from toyviz.app.figures import circuits as circuit_figs
from toyviz.app.figures import visible
from toyviz.app.views.typed import typed_token
from toyviz.i18n import mistake, t
from toyviz.interpret.circuits.export import parse
from toyviz.interpret.circuits.intervene import intervene
from toyviz.interpret.circuits.nodes import NodeGraph, grouped, node_graph
from toyviz.interpret.dictionary import dashboard
from toyviz.settings.controls import clamp

# the worked example of docs/circuits.md first: an induction prompt whose top prediction is " S" (p 0.97)
EXAMPLES = [("induction: a name again", "Mistress Quickly and Master Slender went to the fair. Mistress Quickly told Master"),
            ("a title", "KING HENRY. Now, lords, for France! KING"),
            ("an idiom", "I pray you, good my"),
            ("a famous line", "To be, or not to")]
SCALES = (-4.0, 4.0)          # an intervention's scale: 0 ablates, 1 changes nothing, 2 doubles, −1 flips
MOSTLY_ERRORS = 0.5           # errors' share of the influence past which the view says the graph does not know


def parse_supernodes(text) -> dict[str, list[str]]:
    """"name: id id; other: id id" (ids as the graph names its features, "2_1465_21") → {name: [ids]}. The
    grouping a student typed, as the link keeps it; a part with no name is named by its number."""
    groups: dict[str, list[str]] = {}
    for n, part in enumerate(p for p in str(text or "").split(";") if p.strip()):
        name, _, ids = part.rpartition(":")
        keys = [k for k in re.split(r"[\s,]+", ids) if k]
        if keys:
            groups[name.strip() or f"group {n + 1}"] = keys
    return groups


def circuit_of(explorer: Explorer, prompt, target=""):
    """(the Circuit of the target as typed (toyviz.app.views.typed; blank: the top prediction), note): computed
    once per (prompt, target); the note says what the box's text was read as and what the caps left out."""
    token, read_as = typed_token(explorer.models.need_gpt().tokenizer, target)
    circuit, note = explorer.caches.circuit(prompt, token)
    return circuit, note + read_as + circuit.limits_note()


def view_of(explorer: Explorer, prompt, target=""):
    """(the graph as the tab draws it, the Circuit, note): the graph computed once per (prompt, target)."""
    circuit, note = circuit_of(explorer, prompt, target)
    _, boards = explorer.caches.transcoders()
    piece = explorer.models.need_gpt().tokenizer.piece
    return node_graph(circuit, lambda l, f: boards[l] and dashboard(boards[l], f, piece)), circuit, note


def error_words(view: NodeGraph) -> str:
    """How much the error nodes carry, in words; when it is most of the influence, that the graph does not know."""
    share = t("notes.circuits.errors", share=f"{view.error_share:.0%}", logit=f"{view.logit_errors:.0%}")
    if view.error_share > MOSTLY_ERRORS:
        return t("notes.circuits.mostly_errors", share=share)
    return share + t("notes.circuits.the_rest")


def circuits_view(explorer: Explorer, prompt, target="", supernodes="", projector=False):
    """(note, the graph, the hover panel's first content, the scores and the errors in words)."""
    view, circuit, note = view_of(explorer, prompt, target)
    groups = parse_supernodes(supernodes)
    if groups:
        view = grouped(view, groups)
        if view.unknown:
            note += t("notes.circuits.unknown", ids=", ".join(view.unknown))
    about = t("notes.circuits.about", target=visible(circuit.target_piece), p=f"{circuit.prob:.3f}",
              features=f"{circuit.graph.n_features:,}", nodes=f"{len(circuit.pruned.nodes.nonzero()):,}",
              share=f"{circuit.pruned.node_share:.0%}", seconds=f"{circuit.seconds:.1f}",
              replacement=f"{circuit.replacement:.2f}", completeness=f"{circuit.completeness:.2f}") \
        + "\n\n" + error_words(view)
    return (note, circuit_figs.graph_figure(view, projector=bool(projector)), circuit_figs.panel(view), about)


def feature_node(circuit, node) -> int:
    """The graph's index of the feature named "<layer>_<feature>_<position>"; a UserError if it is none of its."""
    graph = circuit.graph
    named = parse(node or "", graph.n_layers)          # the graph JSON's node_id: "<layer>_<feature>_<position>"
    if named is None or named.kind != "feature":
        raise mistake("errors.circuits.node", given=repr(node))
    layer, feature, position = named.layer, named.index, named.position
    found = ((graph.layer == layer) & (graph.feature == feature) & (graph.position == position)).nonzero()
    if not len(found):
        raise mistake("errors.circuits.inactive", node=node, layer=layer, feature=feature, position=position)
    return int(found[0])


def intervention_view(explorer: Explorer, prompt, target="", node="", scale=0.0, projector=False):
    """A feature scaled (0: ablated) in the real GPT, its target's probability beside the graph's prediction."""
    circuit, _ = circuit_of(explorer, prompt, target)
    transcoders, _ = explorer.caches.transcoders()
    scale = clamp(scale, *SCALES, float, "scale")
    index = feature_node(circuit, node)
    result = intervene(explorer.models.need_gpt().model, transcoders, circuit.graph, index, scale)
    return circuit_figs.intervention_figure(str(node).strip(), scale, circuit.target_piece, result,
                                            projector=bool(projector))


def circuit_json(explorer: Explorer, prompt, target="") -> dict:
    """The graph as `python -m toyviz.circuits` writes it (Neuronpedia's graph-viewer schema)."""
    circuit, _ = circuit_of(explorer, prompt, target)
    return circuit.to_json()
