"""Fast paths agree with the general code they shortcut."""

from __future__ import annotations

import copy
import random

from dynamo_infra.api.manifest import copy_json
from dynamo_infra.render.go.gojson import quote

# Characters quote passes through and characters it escapes.
PLAIN = [chr(c) for c in range(0x20, 0x7F) if chr(c) not in '"\\<>&'] + ["é", "日", "\u00a0"]
ESCAPED = ['"', "\\", "<", ">", "&", "\n", "\x01", "\u2028", "\u2029", "\ud800"]


def test_quote_without_escapes_is_the_general_quote() -> None:
    rng = random.Random(15)
    for _ in range(2000):
        s = "".join(rng.choice(PLAIN + ESCAPED) for _ in range(rng.randint(0, 12)))
        # A trailing control character sends the string through the general loop.
        assert quote(s + "\x01") == quote(s)[:-1] + '\\u0001"'
    assert quote("a<b") == '"a\\u003cb"'
    assert quote("plain-text_1.0") == '"plain-text_1.0"'


def test_copy_json_is_a_deep_copy() -> None:
    class Opaque:
        pass

    value = {"a": [1, 2.5, {"b": None, "c": True}], "d": "x", "e": Opaque()}
    copied = copy_json(value)
    assert copied == {**value, "e": copied["e"]}
    copied["a"][2]["b"] = "changed"
    copied["a"].append(3)
    assert value["a"] == [1, 2.5, {"b": None, "c": True}]
    assert copied["e"] is not value["e"] and isinstance(copied["e"], Opaque)
    assert copy_json(copy.deepcopy(value["a"])) == value["a"]
