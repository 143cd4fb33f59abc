"""Event contracts: one pydantic model per event type, frozen, versioned.

Every topic's payload is defined here so that services, the replay tool and the
JSON Schemas in `schemas/` all read the same definition.
"""
