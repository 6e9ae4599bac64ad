"""Bounds on what a registry file may make the loader do.

The registry comes with the pull request being checked, so its text is
hostile until proven otherwise. Before any node is composed, the YAML event
stream is read once and the file is refused, with the line of the offending
event, when it

* is larger than `MAX_REGISTRY_BYTES` (a real registry is a few kilobytes);
* uses an anchor (`&a`) or an alias (`*a`): a registry has no use for them,
  and nested aliases expand exponentially (nine levels of nine aliases each
  is 387 million nodes for a 300-byte file) in every pass that walks the data;
* nests mappings and sequences deeper than `MAX_NESTING` (the schema needs 6).

Reading events is linear in the size of the text and never expands an alias,
so each refusal comes in milliseconds.
"""

from __future__ import annotations

from pathlib import Path

MAX_REGISTRY_BYTES = 1024 * 1024
MAX_NESTING = 32


def yaml_loader():
    """libyaml's safe loader when the wheel has it (the registry is read on every run that has no kept reading of
    it: :mod:`.load`), else PyYAML's own. PyYAML is imported here, on first use."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_bounded(path: Path, error) -> bytes:
    """The registry's bytes, refused past `MAX_REGISTRY_BYTES` with the line where the limit falls."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_REGISTRY_BYTES + 1)
    if len(data) > MAX_REGISTRY_BYTES:
        line = data.count(b"\n", 0, MAX_REGISTRY_BYTES) + 1
        raise error(path, line, "", f"the registry is larger than the {MAX_REGISTRY_BYTES}-byte (1 MiB) limit "
                                    f"(reached at this line); a registry holds declarations, not data")
    return data


def check_events(text: str, path, error) -> None:
    """Refuse anchors, aliases and deep nesting; `error(path, line, key, message)` builds the exception.

    Malformed YAML is left to the composer that runs next, which reports it with its own message.
    """
    import yaml

    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml_loader()):
            line = event.start_mark.line + 1 if event.start_mark is not None else 0
            if isinstance(event, yaml.AliasEvent):
                raise error(path, line, "", f"YAML alias *{event.anchor} is not allowed in a registry "
                                            "(write the value out where it is used)")
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                raise error(path, line, "", f"YAML anchor &{anchor} is not allowed in a registry "
                                            "(anchors and aliases are refused: they can expand without bound)")
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_NESTING:
                    raise error(path, line, "", f"nesting deeper than {MAX_NESTING} levels is not allowed in a registry")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return
