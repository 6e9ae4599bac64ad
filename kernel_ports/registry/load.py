"""Reading `registry.yaml` into `Registry`.

Three passes, each failing with one `file:line: key: message` line:

1. YAML is composed into nodes so every key keeps its line;
2. the JSON Schema shipped beside this module checks shape and unknown keys;
3. entries are built into frozen dataclasses, and `_cross_check` runs the
   checks that need more than one entry (duplicate names, paths in the root).
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path, PurePosixPath

from kernel_ports.registry.bounds import check_events, read_bounded, yaml_loader
from kernel_ports.registry.model import (
    BACKENDS,
    Backend,
    Compile,
    DEFAULT_DEVICE_TARGETS,
    DeviceCompile,
    Configuration,
    Conventions,
    DispatchSite,
    Exemption,
    Kernel,
    Registry,
    Sources,
    TestSeam,
    Where,
    root_path_problem,
)

SCHEMA_PATH = Path(__file__).with_name("schema.json")

DEFAULT_BACKENDS = {
    "metal": Backend("metal", "mlx::core::fast::metal_kernel", True),
    "cuda": Backend("cuda", "mlx::core::fast::cuda_kernel", False),
    "rocm": Backend("rocm", "mlx::core::fast::hip_kernel", False),
}


MAX_MESSAGE = 300


class RegistryError(Exception):
    """A registry that cannot be used. `str()` is one line naming file:line."""

    def __init__(self, path, line: int, key: str, message: str):
        if len(message) > MAX_MESSAGE:  # a schema message quotes the offending value, which may be the whole file
            message = message[: MAX_MESSAGE // 2] + " ... " + message[-(MAX_MESSAGE // 2 - 5):]
        self.path, self.line, self.key, self.message = str(path), line, key, message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


# -- pass 1: YAML with lines -------------------------------------------------


def _record_lines(node, dotted: str, lines: dict, path) -> None:
    """Record the line of every dotted key below a composed node."""
    import yaml

    lines.setdefault(dotted, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise RegistryError(path, key_node.start_mark.line + 1, dotted or "<top>", "keys must be plain scalars")
            key = str(key_node.value)
            child = f"{dotted}.{key}" if dotted else key
            if key in seen:
                raise RegistryError(path, key_node.start_mark.line + 1, child, "duplicate key")
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            _record_lines(value_node, child, lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _record_lines(item, f"{dotted}[{i}]", lines, path)


def _read_bytes(path: Path) -> bytes:
    try:
        return read_bounded(path, RegistryError)
    except FileNotFoundError:
        raise RegistryError(path, 0, "", "registry file not found") from None
    except OSError as exc:
        raise RegistryError(path, 0, "", f"cannot read registry ({exc.strerror})") from None


def _read_yaml(path: Path, raw: bytes | None = None) -> tuple[dict, dict]:
    import yaml

    try:
        text = (_read_bytes(path) if raw is None else raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RegistryError(path, 0, "", f"not UTF-8 text ({exc.reason})") from None
    check_events(text, path, RegistryError)
    lines: dict = {}
    loader = yaml_loader()
    try:
        node = yaml.compose(text, Loader=loader)
        if node is not None and isinstance(node, yaml.MappingNode):
            _record_lines(node, "", lines, path)
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark else 0
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RegistryError(path, line, "", f"malformed YAML: {problem}") from None
    except ValueError as exc:  # a scalar the safe constructor cannot convert (e.g. an integer of 5000 digits)
        raise RegistryError(path, 0, "", f"unreadable value: {str(exc).splitlines()[0][:120]}") from None
    if node is None or not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
        raise RegistryError(path, 1, "", "the registry must be a YAML mapping")
    return data, lines


# -- pass 2: schema ------------------------------------------------------------


def _dotted(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _validate(path: Path, data: dict, lines: dict) -> None:
    import jsonschema  # imported here: a registry validated before is not validated again (see load_registry)

    validator = jsonschema.Draft7Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: (lines.get(_dotted(e.absolute_path), 0), list(e.absolute_path).__repr__()))
    if not errors:
        return
    error = errors[0]
    key = _dotted(error.absolute_path)
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        if extra:
            bad = f"{key}.{extra[0]}" if key else extra[0]
            allowed = ", ".join(sorted(error.schema.get("properties", {})))
            raise RegistryError(path, lines.get(bad, lines.get(key, 1)), bad, f"unknown key (allowed: {allowed})")
    if error.validator == "required":
        raise RegistryError(path, lines.get(key, 1), key or "<top>", error.message)
    raise RegistryError(path, lines.get(key, 1), key or "<top>", error.message)


# -- pass 3: dataclasses ------------------------------------------------------


class _Builder:
    def __init__(self, path: Path, lines: dict, root: Path):
        self.path, self.lines, self.root = path, lines, root

    def where(self, key: str) -> Where:
        return Where(str(self.path), self.lines.get(key, 1))

    def fail(self, key: str, message: str):
        raise RegistryError(self.path, self.lines.get(key, 1), key, message)

    def inside_root(self, key: str, value: str, glob: bool = False) -> str:
        """A registry path, normalised; it must not leave the root."""
        problem = root_path_problem(value, glob)
        if problem:
            self.fail(key, problem)
        return str(PurePosixPath(value))

    def paths(self, key: str, values, glob: bool = False) -> tuple[str, ...]:
        return tuple(self.inside_root(f"{key}[{i}]", v, glob) for i, v in enumerate(values or ()))

    def outside_path(self, value: str | None) -> Path | None:
        if value is None:
            return None
        p = Path(value)
        return p if p.is_absolute() else (self.path.parent / p).resolve()


def _build(path: Path, data: dict, lines: dict, root_override: str | None) -> Registry:
    """The Registry of a schema-valid document, one section at a time (a bad path fails naming its key)."""
    root = _source_root(path, data, lines, root_override)
    b = _Builder(path, lines, root)
    sources = _sources(b, data)
    compile_ = _compile(b, data, root)
    backends = _backends(data)
    conventions = _conventions(b, data)
    kernels = _kernels(b, data)
    exemptions = _exemptions(b, data)

    registry = Registry(
        path=path,
        root=root,
        sources=sources,
        compile=compile_,
        backends=backends,
        conventions=conventions,
        launchers=b.paths("launchers", data.get("launchers", ())),
        severity=dict(data.get("severity", {})),
        kernels=tuple(kernels),
        exemptions=exemptions,
        where={k: Where(str(path), v) for k, v in lines.items()},
        limits=dict(data.get("limits", {})),
    )
    _cross_check(b, registry)
    return registry


def _source_root(path: Path, data: dict, lines: dict, root_override: str | None) -> Path:
    """The source tree: `--root` (relative to the working directory) or `root:` (relative to the registry file)."""
    root_text = root_override if root_override is not None else data["root"]
    root = Path(root_text)
    if not root.is_absolute():
        base = Path.cwd() if root_override is not None else path.parent
        root = (base / root).resolve()
    if not root.is_dir():
        line = 0 if root_override is not None else lines.get("root", 1)
        key = "--root" if root_override is not None else "root"
        raise RegistryError(path, line, key, f"source root is not a directory: {root}")
    return root


def _sources(b: _Builder, data: dict) -> Sources:
    src = data.get("sources", {})
    return Sources(
        include=b.paths("sources.include", src.get("include", ["**"]), glob=True),
        exclude=b.paths("sources.exclude", src.get("exclude", []), glob=True),
    )


def _compile(b: _Builder, data: dict, root: Path) -> Compile:
    """The compile section; a `default` configuration (no defines) is added when the registry names none."""
    comp = data.get("compile", {})
    configurations = tuple(Configuration(name, tuple(defs)) for name, defs in comp.get("configurations", {"default": []}).items())
    if not any(c.name == "default" for c in configurations):
        configurations = (Configuration("default", ()),) + configurations
    return Compile(
        compile_commands=b.outside_path(comp.get("compile_commands")),
        std=comp.get("std", "c++20"),
        defines=tuple(comp.get("defines", ())),
        include_dirs=tuple(p if p.is_absolute() else (root / p) for p in map(Path, comp.get("include_dirs", ()))),
        configurations=configurations,
        mlx_headers=_header_setting(b, comp, "mlx_headers"),
        cxx_headers=_header_setting(b, comp, "cxx_headers"),
        device_rocm=_device_rocm(b, comp.get("device", {}).get("rocm")),
    )


def _device_rocm(b: _Builder, spec) -> DeviceCompile | None:
    """``compile.device.rocm``; a compiler path is relative to the registry file, like compile_commands."""
    if spec is None:
        return None
    compiler = spec.get("compiler", "auto")
    if compiler != "auto":
        compiler = str(b.outside_path(compiler))
    return DeviceCompile(targets=tuple(spec.get("targets", DEFAULT_DEVICE_TARGETS)), compiler=compiler)


def _backends(data: dict) -> dict:
    """DEFAULT_BACKENDS, each overridden or extended by the registry's `backends:`."""
    backends = dict(DEFAULT_BACKENDS)
    for name, spec in data.get("backends", {}).items():
        backends[name] = Backend(name, spec["factory"], spec["cache_key_has_dtypes"])
    return backends


def _conventions(b: _Builder, data: dict) -> Conventions:
    conv = data.get("conventions", {})
    defaults = Conventions()
    lane_ops = conv.get("lane_ops", "default")
    return Conventions(
        table_type=conv.get("table_type", defaults.table_type),
        selector=conv.get("selector", defaults.selector),
        has_port=conv.get("has_port", defaults.has_port),
        backend_queries=tuple(conv.get("backend_queries", defaults.backend_queries)),
        helper_files=b.paths("conventions.helper_files", conv.get("helper_files", ())),
        rust_backend_gates=tuple(conv.get("rust_backend_gates", defaults.rust_backend_gates)),
        rule_scope=conv.get("rule_scope", defaults.rule_scope),
        lane_ops=None if lane_ops == "default" else tuple(lane_ops),
        test_seams=tuple(
            TestSeam(
                name=s["name"],
                tests=b.paths(f"conventions.test_seams[{i}].tests", s.get("tests", ()), glob=True),
                allowed=b.paths(f"conventions.test_seams[{i}].allowed", s.get("allowed", ()), glob=True),
            )
            for i, s in enumerate(conv.get("test_seams", ()))
        ),
    )


def _kernels(b: _Builder, data: dict) -> list:
    kernels = []
    for i, k in enumerate(data.get("kernels") or ()):
        key = f"kernels[{i}]"
        ports = {backend: k.get("ports", {}).get(backend) for backend in BACKENDS}
        kernels.append(
            Kernel(
                name=k["name"],
                table=k["table"],
                file=b.inside_root(f"{key}.file", k["file"]),
                dispatch=tuple(
                    DispatchSite(d["entry_point"], d["fallback"], b.where(f"{key}.dispatch[{j}]"))
                    for j, d in enumerate(k.get("dispatch", ()))
                ),
                ports=ports,
                rocm_any_wave_size=bool(k.get("rocm_any_wave_size", False)),
                hip_source=k.get("hip_source"),
                predicates=tuple(k.get("predicates", ())),
                severity=dict(k.get("severity", {})),
                where=b.where(key),
                compile_assume=tuple(sorted((k.get("compile_assume") or {}).items())),
            )
        )
    return kernels


def _exemptions(b: _Builder, data: dict) -> tuple:
    return tuple(
        Exemption(
            rule=e["rule"],
            path=b.inside_root(f"exemptions[{i}].path", e["path"], glob=True),
            kernel=e.get("kernel"),
            symbol=(e.get("symbol") or "").strip() or None,
            reason=(e.get("reason") or "").strip(),
            tracking=(e.get("tracking") or "").strip(),
            where=b.where(f"exemptions[{i}]"),
        )
        for i, e in enumerate(data.get("exemptions") or ())
    )


def _header_setting(b: _Builder, comp: dict, key: str) -> str:
    """``auto`` | ``stubs`` | a directory (relative to the registry file, like compile_commands) that holds the headers."""
    value = comp.get(key, "auto")
    if value in ("auto", "stubs"):
        return value
    from kernel_ports.frontend import headers

    d = b.outside_path(value)
    ok = headers.is_mlx_include(d) if key == "mlx_headers" else headers.is_cxx_include(d)
    if not ok:
        wanted = "mlx/mlx.h and mlx/fast.h" if key == "mlx_headers" else "rust/cxx.h or cxx.h"
        b.fail(f"compile.{key}", f"{d} holds no {wanted} (use auto, stubs or an include directory)")
    return str(d)


def _cross_check(b: _Builder, registry: Registry) -> None:
    """Checks that span entries; each names the later of two clashing keys."""
    seen_names: dict = {}
    seen_tables: dict = {}
    for i, kernel in enumerate(registry.kernels):
        if kernel.name in seen_names:
            b.fail(f"kernels[{i}].name", f"kernel name {kernel.name!r} already used by kernels[{seen_names[kernel.name]}]")
        seen_names[kernel.name] = i
        if kernel.table in seen_tables:
            b.fail(f"kernels[{i}].table", f"table {kernel.table!r} already declared by kernels[{seen_tables[kernel.table]}]")
        seen_tables[kernel.table] = i
        if kernel.rocm_any_wave_size and kernel.port("rocm") is None:
            b.fail(f"kernels[{i}].rocm_any_wave_size", "marked any-wave but the kernel has no rocm port")
        if kernel.hip_source and not kernel.rocm_any_wave_size:
            b.fail(f"kernels[{i}].hip_source", "a pinned HIP source is only kept for a table marked rocm_any_wave_size")
        for code in kernel.severity:
            if code not in _known_codes():
                b.fail(f"kernels[{i}].severity.{code}", f"unknown rule code {code}")
    for code in registry.severity:
        if code not in _known_codes():
            b.fail(f"severity.{code}", f"unknown rule code {code}")
    for i, exemption in enumerate(registry.exemptions):
        if exemption.rule not in _known_codes():
            b.fail(f"exemptions[{i}].rule", f"unknown rule code {exemption.rule}")
        if exemption.kernel is not None and exemption.kernel not in seen_names:
            b.fail(f"exemptions[{i}].kernel", f"no kernel named {exemption.kernel!r}")
    names = [c.name for c in registry.compile.configurations]
    if len(set(names)) != len(names):
        b.fail("compile.configurations", "configuration names must be unique")


def _known_codes() -> frozenset:
    from kernel_ports.findings import RULES

    return frozenset(RULES)


def load_registry(path, root_override: str | None = None, *, validated_dir=None) -> Registry:
    """Load, validate and build a registry; raises `RegistryError`.

    With ``validated_dir`` (the CLI passes its cache directory), a registry
    whose exact text passed the schema before, with the same schema and the
    same jsonschema installation, is not validated again: validation is a pure
    function of those, and importing jsonschema and running it was a sixth of
    a warm check. A marker is written there only after a successful
    validation. Its reading by PyYAML (the data and each key's line) is kept
    there too, as data (:mod:`kernel_ports.cache.format`), keyed by the text,
    this package's code and the PyYAML installation: a text read before is
    not parsed again, and PyYAML is not imported. Building and the
    cross-checks always run.
    """
    path = Path(path)
    if validated_dir is None:
        data, lines = _read_yaml(path)
        marker = None
    else:
        raw = _read_bytes(path)  # read once: the reading's key, the text and the marker's key
        data, lines = _read_kept(path, raw, Path(validated_dir))
        marker = _validated_marker(raw, validated_dir)
    if marker is None or not marker.is_file():
        _validate(path, data, lines)
        if marker is not None:
            try:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
            except OSError:
                pass
    return _build(path, data, lines, root_override)


def _read_kept(path: Path, raw: bytes, validated_dir: Path) -> tuple[dict, dict]:
    """(data, lines) of the registry's text ``raw``: PyYAML's reading kept from an earlier run of this text, else
    read now (and kept, when the data is plain: a YAML date, set or binary value is read every time)."""
    from kernel_ports.cache import format as cachefmt

    key = _reading_key(raw)
    where = validated_dir / f"registry-read-{key[:32]}.json"
    kept = cachefmt.read_entry(where, key) if key else None
    if type(kept) is tuple and len(kept) == 2 and type(kept[0]) is dict and type(kept[1]) is dict \
            and all(type(k) is str and type(v) is int for k, v in kept[1].items()):
        return kept
    data, lines = _read_yaml(path, raw)
    if key:
        cachefmt.write_entry(where, key, (data, lines))
    return data, lines


def _reading_key(raw: bytes) -> str | None:
    """What PyYAML's reading of ``raw`` depends on: the text, this package's loader and bounds, the PyYAML
    installation; None when that cannot be told."""
    h = hashlib.sha256(b"registry-read\0" + raw)
    try:
        for name in ("load.py", "bounds.py"):
            h.update((Path(__file__).parent / name).read_bytes())
        stamp = _installation_stamp("yaml")
    except OSError:
        return None
    if stamp is None:
        return None
    h.update(stamp.encode())
    return h.hexdigest()


def _installation_stamp(module: str) -> str | None:
    """An installed package's entry file and folder by size, time and inode (None when it is not installed):
    what tells one installation from another without reading it. OSError when they cannot be read."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    out = []
    for p in (spec.origin, os.path.dirname(spec.origin)):
        st = os.stat(p)
        out.append(f"{p}|{st.st_mtime_ns}|{st.st_size}|{st.st_ino}")
    return "\n".join(out)


def _validated_marker(raw: bytes, validated_dir) -> Path | None:
    """The marker of a text that passed the schema: keyed by the text, the schema and the jsonschema installation."""
    try:
        h = hashlib.sha256(raw)
        h.update(SCHEMA_PATH.read_bytes())
        h.update((_installation_stamp("jsonschema") or "").encode())
    except OSError:
        return None
    return Path(validated_dir) / f"registry-valid-{h.hexdigest()[:32]}"
