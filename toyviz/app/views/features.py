"""The Features tab: the sparse autoencoder's features on the prompt, one feature's dashboard, a list to pick from."""
from __future__ import annotations

from toyviz.app.explorer import Explorer
from toyviz.app.figures import features as feature_figs
from toyviz.settings.controls import settle


LISTED_FEATURES = 12          # features named in the tab's list (the prompt's, a search's, the most frequent)


def feature_line(features, f: int) -> str:
    return f"**#{f}** {features.labels[f]} ({features.data.frequency[f]:.2%} of tokens)"


def feature_list(features, found: list[int], search: str) -> str:
    """The tab's list: the search's hits, or the most frequent features, each with its number."""
    if search.strip():
        head = (f"Features matching **{search.strip()}**:" if found else
                f"No feature matches **{search.strip()}** (its strongest tokens, the tokens it promotes, its label).")
    else:
        head, found = "The most frequent features:", features.by_frequency()
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
    about = (f"### Feature #{feature}: {dashboard.label}\nActive on {dashboard.frequency:.2%} of held-out tokens, "
             f"strongest activation {dashboard.max_activation:.2f}. On this prompt: "
             + (", ".join(f"#{f} {features.labels[f]}" for f in strongest[:5]) or "no feature fires") + ".\n\n"
             f"The dictionary: {len(features):,} features at `{features.site.name}`, {m['k']} active per token; it explains "
             f"{m['fve']:.0%} of the activations' variance and recovers {m['ce_recovered']:.0%} of the loss when "
             f"spliced in; {m['dead']:.1%} of its features never fire.")
    return (note, feature_figs.prompt_features(found, projector=projector), about,
            feature_figs.top_contexts(dashboard, projector=projector),
            feature_figs.activation_histogram(dashboard, projector=projector),
            feature_figs.logit_effects(dashboard, projector=projector),
            feature_list(features, features.search(str(search or "")), str(search or "")))
