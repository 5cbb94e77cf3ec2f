"""The a2a-sdk 1.3.0 canonical form of Agent Cards, many per process (tests/reference_oracle.rs).

Reads one card per line on stdin, as hex of the card's JSON text (so any bytes survive: NaN,
lone surrogate escapes, duplicate names). For each, in order, writes one JSON line:
  {"form_hex": "<hex of the UTF-8 form>"}   the SDK's canonical form of the card without
                                             `signatures` (conduct-walk.md §4.3 C.2)
  {"refused": "<exception type>: <text>"}   the SDK would not parse it into an AgentCard
  {"not_json": "<text>"}                     Python's reader refused the text
The card is read by Python's json module (the reader the walk's §4.1 describes), parsed into the
AgentCard protobuf with unknown fields ignored, and canonicalised by
a2a.utils.signing._canonicalize_agent_card. Only the SDK is used here, never the reference walker.
"""

import json
import logging
import sys
import warnings

from google.protobuf.json_format import ParseDict

from a2a.types import AgentCard
from a2a.utils.signing import _canonicalize_agent_card

# The SDK warns (through logging) about cards missing required members; the form is still made.
logging.disable(logging.CRITICAL)
warnings.simplefilter("ignore")


def why(e):
    """An exception as text a strict JSON reader takes (lone surrogates escaped)."""
    return f"{type(e).__name__}: {e}".encode("utf-8", "backslashreplace").decode("utf-8")


def form(text):
    try:
        card = json.loads(text)
    except Exception as e:  # noqa: BLE001 - any refusal of the reader is "not JSON"
        return {"not_json": why(e)}
    try:
        if isinstance(card, dict):
            card = {k: v for k, v in card.items() if k != "signatures"}
        message = ParseDict(card, AgentCard(), ignore_unknown_fields=True)
        canonical = _canonicalize_agent_card(message)
    except Exception as e:  # noqa: BLE001 - every refusal means "no form"
        return {"refused": why(e)}
    return {"form_hex": canonical.encode("utf-8", "surrogatepass").hex()}


def main():
    out = sys.stdout
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            text = bytes.fromhex(line).decode("utf-8")
        except UnicodeDecodeError as e:
            out.write(json.dumps({"not_json": why(e)}) + "\n")
            continue
        out.write(json.dumps(form(text)) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
