"""Write the attribution graph of one prediction as JSON (Neuronpedia's graph viewer / circuit-tracer schema).

    toyviz circuits "To be, or not to" --target " be" [--out graphs/ | --out graphs/to-be.json]

The graph goes into a folder as <slug>.json, listed in the folder's graph-metadata.json, so the folder opens
in circuit-tracer's local server (`circuit_tracer.frontend.serve(data_dir=folder)`); a file name given with
--out is the slug. Prints the graph's size, its replacement and completeness scores and the time it took;
the code is toyviz.interpret.circuits.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from toyviz.errors import UserError


def main(argv=None) -> dict:
    import toyviz
    from toyviz.interpret.circuits import EDGE_THRESHOLD, NODE_THRESHOLD, export, load_labels, load_transcoders, trace
    from toyviz.interpret.transcoders import FOLDER

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("prompt")
    p.add_argument("--target", default=None, help="one token, e.g. ' be' (default: the GPT's top prediction)")
    p.add_argument("--gpt", default="gpt", help="'gpt' (shipped) or a checkpoint folder")
    p.add_argument("--transcoders", default=None, help="folder (default <GPT checkpoint>/transcoders)")
    p.add_argument("--node-threshold", type=float, default=NODE_THRESHOLD, help="share of node influence kept")
    p.add_argument("--edge-threshold", type=float, default=EDGE_THRESHOLD, help="share of edge influence kept")
    p.add_argument("--out", default=None, help="a folder (default: here), or a file <slug>.json in one; the folder's "
                                               "graph-metadata.json lists it")
    p.add_argument("--device", default=None)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    gpt = toyviz.load(args.gpt, device=args.device)
    folder = args.transcoders or Path(gpt.source) / FOLDER
    try:
        transcoders = load_transcoders(gpt, folder)
    except FileNotFoundError as err:             # the folder named on the command line: the caller's to correct
        raise UserError(str(err)) from None
    circuit = trace(gpt, transcoders, args.prompt, args.target, labels=load_labels(folder),
                    node_threshold=args.node_threshold, edge_threshold=args.edge_threshold)
    out = Path(args.out or ".")
    named = out.suffix == ".json"
    graph = circuit.to_json(out.stem if named else None)
    out = export.save(graph, out.parent if named else out)
    summary = {"out": str(out), "index": str(out.parent / export.INDEX), "target": circuit.target_piece,
               "prob": round(circuit.prob, 4),
               "positions": circuit.graph.n_positions, "features": circuit.graph.n_features,
               "nodes_kept": len(graph["nodes"]), "links_kept": len(graph["links"]),
               "replacement": round(circuit.replacement, 4), "completeness": round(circuit.completeness, 4),
               "seconds": round(circuit.seconds, 2)}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":          # python -m toyviz.circuits, as tests and older notes run it: toyviz circuits
    from toyviz.cli import run
    run("circuits", sys.argv[1:])
