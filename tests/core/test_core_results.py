"""The API's results: `to_json()` gives a fresh copy, all the way down."""

from __future__ import annotations

from ledger.core.results import WhyEvicted


def test_to_json_is_a_deep_copy_equal_to_the_data() -> None:
    data = {
        "ref": "a",
        "versions": [
            {"id": "a", "decisions": [{"pack": 1, "hint": {"steps": [{"ids": ["x", "y"]}]}}]},
        ],
        "pair": ("p", ["q"]),
        "other": {"set"},  # not JSON: copied by deepcopy
    }
    result = WhyEvicted(data)
    out = result.to_json()
    assert out == data and type(out["pair"]) is tuple
    assert out["other"] is not data["other"]
    out["versions"][0]["decisions"][0]["hint"]["steps"][0]["ids"].append("z")
    out["pair"][1].append("r")
    out["ref"] = "b"
    # The result's data is untouched, and the next copy is fresh again.
    assert result.to_json() == data
    assert data["versions"][0]["decisions"][0]["hint"]["steps"][0]["ids"] == ["x", "y"]
    assert data["pair"] == ("p", ["q"])
    assert result.versions[0]["id"] == "a"
