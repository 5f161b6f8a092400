"""Events and their delivery: the event union and the in-memory broadcast bus."""

from .events import EVENT_KINDS, Event, decode_event, encode_event
from .memory import InMemoryBus, Subscription, SubscriptionStats

__all__ = [
    "EVENT_KINDS",
    "Event",
    "InMemoryBus",
    "Subscription",
    "SubscriptionStats",
    "decode_event",
    "encode_event",
]
