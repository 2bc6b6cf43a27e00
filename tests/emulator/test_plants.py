"""The plant runner (tests/emulator/plants.py) can plant every one of its bugs: each plant's text
occurs exactly once in the file it edits (a template rewritten around it leaves a plant that
stops the runner, and a check that no longer checks anything)."""

from __future__ import annotations

import pytest

from tests.emulator.plants import PLANTS, ROOT


@pytest.mark.parametrize("plant", PLANTS, ids=lambda plant: plant.name)
def test_each_plants_text_occurs_once(plant):
    assert (ROOT / plant.path).read_text().count(plant.old) == 1, (plant.name, plant.path, plant.old)
