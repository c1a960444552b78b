"""`trainconsole.protocol` gives its names on first use (PEP 562): every name it lists resolves to
its module's
object, its submodules resolve too, and an unknown name is an AttributeError."""

from __future__ import annotations

import importlib

import pytest

from trainconsole import protocol


def test_every_listed_name_resolves_to_its_module_s_object() -> None:
    assert sorted(protocol.__all__) == sorted(protocol._FROM)
    for name, module in protocol._FROM.items():
        found = importlib.import_module(f"trainconsole.protocol.{module}")
        assert getattr(protocol, name) is getattr(found, name)
    assert protocol.places is importlib.import_module("trainconsole.protocol.places")
    with pytest.raises(AttributeError):
        protocol.no_such_name  # noqa: B018
