"""Gradio's sessions share the page's default config until they change it.

Every page open is a new Gradio session, and Gradio 6 starts each one with its own copy of every component's
config (`SessionState.config_values`, kept so a deep link can recreate the page): ~300 components' configs
built again through `inspect.signature` for each page open, 0.36 MB kept per session. Profiled with a hall
opening the link (py-spy, benchmarks.hall --events), that was about half of the server's work for the
page's opening events. Here a session starts from one shared copy of those configs, made once per app, and
copies an entry only when it writes to it (Gradio writes a component's new value into it after an event).
The config a session holds is the same as before, entry for entry (tests/test_sessions.py checks it).
"""
from __future__ import annotations

import os
import weakref
from copy import copy

from gradio import state_holder

_defaults: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()    # Blocks → its components' default configs
_original_init = state_holder.SessionState.__init__
_original_update_value = state_holder.SessionState._update_value_in_config


def _init(self, blocks):
    shared = _defaults.get(blocks)
    if shared is None:                              # the app's first session: Gradio's own, kept
        _original_init(self, blocks)
        _defaults[blocks] = shared = self.config_values
    else:                                           # Gradio's fields, set as its __init__ sets them, less the configs
        self.blocks_config = copy(blocks.default_config)
        self.state_data, self._state_ttl, self.is_closed = {}, {}, False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600
    self.config_values = dict(shared)               # entries shared until this session writes one


def _update_value(self, key, value):
    """Gradio writes a component's new value into the session's config in place: a shared entry is copied
    first, so no other session sees it."""
    entry = self.config_values.get(key)
    if entry is not None and "props" in entry:
        self.config_values[key] = {**entry, "props": {**entry["props"], "value": value}}
        return
    _original_update_value(self, key, value)


def share_default_configs() -> None:
    """Patch Gradio's SessionState so that sessions share the default configs (idempotent)."""
    state_holder.SessionState.__init__ = _init
    state_holder.SessionState._update_value_in_config = _update_value
