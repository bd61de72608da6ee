"""Tables whose stored config holds what a newer version would refuse to save."""

from __future__ import annotations

import json
from typing import Any

import evonb
from evonb.table.config import TableConfig


def with_stored_properties(table: Any, properties: dict[str, str]) -> Any:
    """``table`` reopened after its config file was given ``properties`` directly, as an
    older version that did not check them could have saved them."""
    path = TableConfig.path(table.root)
    body = json.loads(path.read_text())
    body["properties"] = dict(properties)
    path.write_text(json.dumps(body))
    return evonb.open_table(table.path)
