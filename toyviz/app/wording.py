"""The page's words in the visitor's language: each component with words of the catalogues is made here with its
keys (`Wording.__call__`), in English as the page is built, and said again in the visitor's language as the page
opens (`Wording.opened`, one event: nothing to send for an English page). The language is the request's
(toyviz.i18n.language: ?lang=, else Accept-Language), so a deep link, the header's switch and the browser agree.
"""
from __future__ import annotations

import gradio as gr

from toyviz.i18n import LANGUAGES, catalogue, language, t


def _said(words: dict, lang: str) -> dict:
    """{attribute: key} → {attribute: text}; `choices` is a list of (key, value) pairs (a choice whose label is no
    key stays as it is), or a function of the language giving the choices (the lessons in it)."""
    return {attribute: key(lang) if callable(key) else
            [(_say(k, lang), value) for k, value in key] if attribute == "choices" else
            [_say(k, lang) for k in key] if attribute == "sample_labels" else t(key, lang)
            for attribute, key in words.items()}


def _say(key: str, lang: str) -> str:
    return t(key, lang) if key in catalogue(LANGUAGES[0]) else key


class Wording:
    """The components made with catalogue keys, and what each says in each language."""

    def __init__(self):
        self.worded: list[tuple[gr.components.Component, dict]] = []

    def __call__(self, make, words: dict, **kwargs):
        """make(**kwargs) with `words` ({attribute: catalogue key}: label, value, placeholder; `choices` as
        (key, value) pairs or a function of the language) said in English, and kept to be said again in the
        visitor's language."""
        component = make(**kwargs, **_said(words, LANGUAGES[0]))
        self.worded.append((component, words))
        return component

    def add(self, component, words: dict):
        """A component made elsewhere (a tab of its own module), said in the visitor's language as the page opens."""
        self.worded.append((component, words))
        return component

    def adopt(self, blocks: gr.Blocks):
        """Every other component whose label, placeholder, info or button text is an English text of the catalogues'
        [labels] table (a Markdown's, of [explain_adopted]), worded by it: the controls keep their English in the code
        that lays them out (a tab's own module too), and a translator's catalogue says them in another language. A
        radio's or a dropdown's choices and the example prompts' names ([example_labels]) likewise."""
        english = catalogue(LANGUAGES[0]).items()
        known = {text: key for key, text in english if key.startswith("labels.")}
        explained = {text: key for key, text in english if key.startswith("explain_adopted.")}
        examples = {text: key for key, text in english if key.startswith("example_labels.")}
        worded = {id(component): words for component, words in self.worded}
        for component in list(blocks.blocks.values()):
            labels = getattr(component, "sample_labels", None) if isinstance(component, gr.Dataset) else None
            if id(component) in worded:         # made with its keys: only its examples' names to add
                if labels and any(label in examples for label in labels):
                    worded[id(component)]["sample_labels"] = [examples.get(label, label) for label in labels]
                continue
            words = {attribute: known[text] for attribute in ("label", "placeholder", "info")
                     if isinstance(text := getattr(component, attribute, None), str) and text in known}
            if isinstance(component, gr.Button) and component.value in known:
                words["value"] = known[component.value]
            if isinstance(component, gr.Markdown) and component.value in explained:
                words["value"] = explained[component.value]
            choices = getattr(component, "choices", None)
            if isinstance(component, (gr.Radio, gr.Dropdown)) and choices and any(str(shown) in known
                                                                          for shown, _ in choices):
                words["choices"] = [(known.get(str(shown), shown), value) for shown, value in choices]
            if labels and any(label in examples for label in labels):
                words["sample_labels"] = [examples.get(label, label) for label in labels]
            if words:
                self.worded.append((component, words))

    def updates(self, lang: str) -> list:
        """Every worded component's words in `lang` (skipped in English: the page was built in it)."""
        if lang == LANGUAGES[0]:
            return [gr.skip()] * len(self.worded)
        return [gr.update(**_said(words, lang)) for _, words in self.worded]

    def wire(self, demo: gr.Blocks):
        """As the page opens, its words in the request's language (not queued: text only, no model); the components
        made without keys are adopted first (`adopt`)."""
        self.adopt(demo)
        # the page's language for its own scripts too (<html lang>): the page's sampler speaks in it
        # (web/src/sampler.js), and a screen reader reads the page in it
        spoken = gr.Textbox(value=LANGUAGES[0], visible=False)

        def opened(request: gr.Request):
            lang = language(request)
            return self.updates(lang) + [lang]
        demo.load(opened, None, [component for component, _ in self.worded] + [spoken], queue=False,
                  api_visibility="private").then(None, spoken, None, js=SET_PAGE_LANGUAGE)


SET_PAGE_LANGUAGE = "(lang) => { document.documentElement.lang = lang; }"
