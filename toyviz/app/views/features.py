"""The Features tab: the sparse autoencoder's features on the prompt, one feature's dashboard, a list to pick from."""
from __future__ import annotations

from toyviz.i18n import t
from toyviz.app.explorer import Explorer
from toyviz.app.figures import features as feature_figs
from toyviz.settings.controls import settle
from toyviz.interpret.dashboards import said as said_label


LISTED_FEATURES = 12          # features named in the tab's list (the prompt's, a search's, the most frequent)


def feature_line(features, f: int) -> str:
    return t("notes.features.line", feature=f, label=said_label(features.labels[f]), share=f"{features.data.frequency[f]:.2%}")


def feature_list(features, found: list[int], search: str) -> str:
    """The tab's list: the search's hits, or the most frequent features, each with its number."""
    if search.strip():
        head = t("notes.features.matching" if found else "notes.features.no_match", search=search.strip())
    else:
        head, found = t("notes.features.most_frequent"), features.by_frequency()
    return head + "\n\n" + "\n".join(f"- {feature_line(features, f)}" for f in found[:LISTED_FEATURES])


def features_view(explorer: Explorer, prompt, feature=-1, search="", projector=False):
    """The prompt's features, one feature's dashboard (-1: the prompt's strongest), and a list to pick from."""
    features = explorer.caches.features()
    found, note = explorer.caches.prompt_features(prompt)
    feature, said = settle("feature", feature, high=len(features) - 1)
    note += said
    strongest = found.strongest(LISTED_FEATURES)
    if feature < 0:
        feature = strongest[0] if strongest else features.by_frequency()[0]
    dashboard = features.dashboard(feature)
    m = features.metrics
    about = t("notes.features.about", feature=feature, label=said_label(dashboard.label), share=f"{dashboard.frequency:.2%}",
              strongest=f"{dashboard.max_activation:.2f}",
              here=", ".join(f"#{f} {said_label(features.labels[f])}" for f in strongest[:5]) or t("notes.features.none_fires"),
              count=f"{len(features):,}", site=features.site.name, k=m["k"], fve=f"{m['fve']:.0%}",
              recovered=f"{m['ce_recovered']:.0%}", dead=f"{m['dead']:.1%}")
    return (note, feature_figs.prompt_features(found, projector=projector), about,
            feature_figs.top_contexts(dashboard, projector=projector),
            feature_figs.activation_histogram(dashboard, projector=projector),
            feature_figs.logit_effects(dashboard, projector=projector),
            feature_list(features, features.search(str(search or "")), str(search or "")))
