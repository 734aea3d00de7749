"""What the methods of every resource stand on: the hook's ``call`` and ``paginate`` (its client,
:class:`~analytics_provider.hooks.client.AnalyticsClientHook`, gives them), the types they take,
and the checks they share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from analytics_provider.exceptions import AnalyticsParameterError

if TYPE_CHECKING:
    from analytics_provider.hooks.client import AnalyticsClientHook as Client
else:
    Client = object

Id = int | str
Json = dict[str, Any]


class ResourceMethods(Client):
    """Base of one resource's methods: for the type checker, the client whose ``call`` and
    ``paginate`` they use (at run time the hook mixes the client in after them). A query option
    that is None is not sent (the request leaves it out); a body is built with :func:`given`."""


def given(options: Mapping[str, Any]) -> Json:
    """The options that are set (not None), for a body."""
    return {name: value for name, value in options.items() if value is not None}


def check_choice(name: str, param: str, value: Any, choices: Sequence[str]) -> None:
    if value not in choices:
        raise AnalyticsParameterError(f"{name}: {param} must be one of {', '.join(choices)}; got {value!r}")
