"""The capability registry: which capabilities and versions this server knows, and message validation.

Data lives in the repository's top-level `capabilities/` directory (see its README):

    capabilities/<id>/capability.json          {"id", "title", "description", "aliases", "openapi_root"?}
    capabilities/<id>/<X.Y.Z>/schema.json      as published (JSON Schema 2020-12 or OpenAPI 3.0)
    capabilities/<id>/<X.Y.Z>/examples/*.json  example messages; each validates (tests/capabilities)

Accepted schema URLs (`Registry.resolve`):

- canonical   `https://aitp.dev/capabilities/<id>/v<X.Y.Z>/schema.json`
- this server `<any base>/v1/capabilities/<id>/<X.Y.Z>/schema.json`
- docs form   `https://crates.io/crates/aitp_schema/capabilities/<id>/v<X.Y.Z>/schema.json`
- aliases     exact URLs listed in capability.json, each naming the version it stands for (hub-era URLs
              such as `https://aitp.dev/v1/decisions/schema.json`); an alias wins over the forms above.

Each (capability, version) is converted (`schema_formats`), checked against its metaschema with
`jsonschema`, and compiled with `jsonschema_rs` when the registry is loaded, into exactly two validators
whatever the number of message types: one for the whole schema (`root`, which decides validity), and one
*dispatch* validator whose property `<type>` refers to the branch of that message type (the branch of the
root `anyOf`/`oneOf` that requires that key), with the document embedded once. An invalid message
`{"request_decision": ...}` is reported by validating `{"request_decision": <message>}` against the
dispatch validator, so against the branch it claims to be rather than as one opaque `anyOf` failure.
(Compiling one full copy of the document per message type made registration quadratic: a root object with
700 optional properties has 700 message types, and took seconds and a gigabyte.)

Validation decides with `is_valid` first; only an invalid message pays for an error, and only for the first
one (`validate`, which stops there; `iter_errors` builds every error, each with a copy of its instance).
`complexity.expansion` bounds, before a schema is accepted, how many subschemas can apply to one message
node, which bounds what both cost (a `oneOf` recursing into itself made error reporting exponential).

Only local `$ref`s resolve: the engine's retriever refuses every other URI, so a schema with a remote
reference fails to load instead of making the server fetch anything. Patterns use the engine's linear-time
regex engine (`RegexOptions`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

import jsonschema
import jsonschema_rs
from packaging.version import Version

from aitp.capabilities import complexity
from aitp.capabilities.schema_formats import SchemaFormatError, to_json_schema
from aitp.config import Settings
from aitp.shipped import shipped_directory

CANONICAL_BASE = "https://aitp.dev/capabilities"
ENV_DIRECTORY = "AITP_CAPABILITIES_DIR"
MAX_ISSUE_MESSAGE = 500
# for directory loads: the defaults of AITP_MAX_SCHEMA_EXPANSION and AITP_MAX_JSON_DEPTH
DEFAULT_MAX_EXPANSION = Settings.max_schema_expansion
DEFAULT_MAX_DEPTH = Settings.max_json_depth

_ID = r"[a-z0-9][a-z0-9._-]*"
_VERSION = r"(?P<version>\d+\.\d+\.\d+)"
_ID_RE = re.compile(rf"^{_ID}$")
_VERSION_DIR_RE = re.compile(rf"^{_VERSION}$")
# matched against "host/path" (scheme dropped, host lower-cased) or a bare "/path"
_URL_FORMS = (
    re.compile(rf"^aitp\.dev/capabilities/(?P<id>{_ID})/v?{_VERSION}/schema\.json$"),
    re.compile(rf"^crates\.io/crates/aitp_schema/capabilities/(?P<id>{_ID})/v?{_VERSION}/schema\.json$"),
    re.compile(rf"^[^/]*(?:/[^?#]*)?/v1/capabilities/(?P<id>{_ID})/v?{_VERSION}/schema\.json$"),
)


class CapabilityLoadError(ValueError):
    """The capabilities directory holds something the registry cannot load."""


class RemoteReferenceRefused(ValueError):
    """A capability schema referred to a remote document; the server never fetches one."""


class AliasRefused(ValueError):
    """A URL that cannot become an alias; `taken` is what it already means, if that is the reason."""

    def __init__(self, message: str, taken: CapabilityRef | None = None) -> None:
        super().__init__(message)
        self.taken = taken


class UnknownCapabilityVersion(KeyError):
    """`Registry.validate` was asked about a (capability, version) the registry does not have."""


@dataclass(frozen=True)
class CapabilityRef:
    id: str
    version: Version

    @property
    def url(self) -> str:
        """The canonical schema URL, https://aitp.dev/capabilities/<id>/v<X.Y.Z>/schema.json."""
        return f"{CANONICAL_BASE}/{self.id}/v{version_text(self.version)}/schema.json"

    def __str__(self) -> str:
        return f"{self.id} v{version_text(self.version)}"


@dataclass(frozen=True)
class SchemaIssue:
    pointer: str  # JSON pointer into the message, "" for the root, e.g. "/request_decision/options/0/id"
    message: str


@dataclass
class CapabilityVersion:
    ref: CapabilityRef
    schema: dict[str, Any]  # the JSON Schema actually compiled (after OpenAPI conversion)
    source: dict[str, Any]  # the schema.json as published
    examples: dict[str, dict[str, Any]]  # file name -> example message
    message_types: list[str]  # top-level keys a message may carry, in the schema's branch order


@dataclass
class CapabilityInfo:
    id: str
    title: str
    description: str
    aliases: list[dict[str, str]]
    versions: list[Version]  # ascending


@dataclass
class CompiledVersion:
    """A capability version with its validators, ready to be added to a registry."""

    version: CapabilityVersion
    root: Any  # jsonschema_rs validator for the whole schema
    dispatch: Any  # jsonschema_rs validator of {message type: message}: each type checked against its branch
    branches: dict[str, str]  # message type -> JSON pointer of its branch in `version.schema`
    expansion: int = 0  # most subschemas that can apply to one message node (complexity.expansion)

    def validate(self, message: Any, limit: int = 1) -> list[SchemaIssue]:
        """[] when `message` is valid; else its first issue (`limit` <= 1), or at most `limit` issues.

        Validity is decided by `is_valid` (the fast path: valid messages never build an error). The first
        issue comes from `validate`, which stops at the first error. A `limit` above 1 collects every error
        with `iter_errors` (diagnostics and tests: it costs every error, never use it on a request path).
        Errors are reported against the branch of the message type the message carries (its first
        top-level key that is one of `message_types`); a message carrying none gets one root issue.
        """
        if self.root.is_valid(message):
            return []
        ref = self.version.ref
        if not isinstance(message, dict):
            return [SchemaIssue("", f"a {ref.id} message must be a JSON object")]
        message_type = next((key for key in message if key in self.branches), None)
        if message_type is None:
            types = ", ".join(self.branches)
            return [SchemaIssue("", f"expected a top-level key naming a message type of {ref}: {types}")]
        wrapped = {message_type: message}
        if limit <= 1:
            issue = _first_issue(self.dispatch, wrapped, 1) or _first_issue(self.root, message, 0)
            return [issue or SchemaIssue("", f"not a valid {ref.id} message")]
        issues = _issues(self.dispatch.iter_errors(wrapped), limit, 1)
        return issues or _issues(self.root.iter_errors(message), limit, 0)


class SchemaRejected(ValueError):
    """A schema that cannot serve as a capability version; `pointer` locates the problem in the schema."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(message)
        self.pointer = pointer


class SchemaTooComplex(SchemaRejected):
    """A schema whose validation or error reporting could cost without bound (see `complexity`)."""


def compile_version(
    ref: CapabilityRef,
    source: Any,
    openapi_root: str | None = None,
    examples: dict[str, dict[str, Any]] | None = None,
    *,
    max_expansion: int = DEFAULT_MAX_EXPANSION,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> CompiledVersion:
    """Convert, metaschema-check and compile a published schema document; SchemaRejected if it can't serve.

    SchemaTooComplex (a SchemaRejected) when one node of a message nested `max_depth` levels could be
    checked by more than `max_expansion` subschemas. Two validators are compiled, whatever the schema.
    Examples are kept, not checked here: the caller decides whether an invalid example is fatal.
    """
    try:
        schema = to_json_schema(source, openapi_root)
    except SchemaFormatError as exc:
        raise SchemaRejected(str(exc)) from None
    check_metaschema(schema)
    try:
        root = compile_schema(schema)
        branch_pointers = message_branches(schema)
    except CapabilityLoadError as exc:
        raise SchemaRejected(str(exc)) from None
    except Exception as exc:  # jsonschema_rs reports schema and $ref errors as ValidationError
        raise SchemaRejected(f"cannot compile: {_first_line(exc)}") from None
    try:
        bound = complexity.expansion(schema, max_depth, max_expansion)
    except complexity.SchemaTooComplex as exc:
        raise SchemaTooComplex(str(exc), exc.pointer) from None
    try:
        dispatch = compile_schema(_dispatch_schema(schema, branch_pointers, ref))
    except Exception as exc:
        raise SchemaRejected(f"cannot compile: {_first_line(exc)}") from None
    version = CapabilityVersion(
        ref=ref, schema=schema, source=source, examples=dict(examples or {}), message_types=list(branch_pointers)
    )
    return CompiledVersion(
        version=version, root=root, dispatch=dispatch, branches=branch_pointers, expansion=bound.worst
    )


def check_metaschema(schema: dict[str, Any]) -> None:
    """SchemaRejected unless `schema` passes its metaschema.

    jsonschema-rs decides (about 2 ms for a 190 KB schema); the Python `jsonschema` check (about a second for
    the same schema, all of it holding the event loop) runs only to describe a schema already found invalid,
    or one whose `$schema` jsonschema-rs does not know. Patterns are judged by the engine that runs them
    (the compile step), not by Python's `re`.
    """
    try:
        if jsonschema_rs.meta.is_valid(schema):
            return
    except Exception:  # an unknown $schema (ReferencingError): let the Python check judge it
        pass
    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except jsonschema.SchemaError as exc:
        pointer = json_pointer(exc.absolute_path)
        raise SchemaRejected(f"not a valid JSON Schema at {pointer or '/'}: {exc.message}", pointer) from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def version_text(version: Version) -> str:
    """X.Y.Z for a version (Version("1.0") prints as "1.0"; URLs and directories use three parts)."""
    return f"{version.major}.{version.minor}.{version.micro}"


def default_directory() -> Path:
    """$AITP_CAPABILITIES_DIR if set, else the shipped capabilities (see aitp.shipped)."""
    configured = os.environ.get(ENV_DIRECTORY)
    if configured:
        return Path(configured)
    return shipped_directory("capabilities")


def json_pointer(path: Iterable[str | int]) -> str:
    """RFC 6901 pointer for a path of keys and indexes ("" for the root)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def message_branches(schema: dict[str, Any]) -> dict[str, str]:
    """Message type -> JSON pointer (into `schema`) of the branch that validates that message type.

    The root (after local `$ref`s) is either an `anyOf`/`oneOf` of message schemas or one message schema;
    a branch's message types are its required keys other than `$schema` (or, requiring none, its
    properties). The first branch naming a type wins.
    """
    root_pointer, root = _follow_refs(schema, "", schema)
    alternatives: list[tuple[str, Any]] = []
    for keyword in ("anyOf", "oneOf"):
        if isinstance(root.get(keyword), list):
            alternatives = [(f"{root_pointer}/{keyword}/{i}", b) for i, b in enumerate(root[keyword])]
            break
    if not alternatives:
        alternatives = [(root_pointer, root)]
    found: dict[str, str] = {}
    for pointer, branch in alternatives:
        _, target = _follow_refs(schema, pointer, branch)
        for message_type in _branch_message_types(target):
            found.setdefault(message_type, pointer)
    return found


def _branch_message_types(branch: dict[str, Any]) -> list[str]:
    required = branch.get("required")
    keys = [k for k in required if isinstance(k, str)] if isinstance(required, list) else []
    keys = [k for k in keys if k != "$schema"]
    if not keys and isinstance(branch.get("properties"), dict):
        keys = [k for k in branch["properties"] if k != "$schema"]
    return keys


def _follow_refs(document: dict[str, Any], pointer: str, node: Any) -> tuple[str, dict[str, Any]]:
    """Follow a chain of local `{"$ref": "#/..."}` nodes; returns the final node and its pointer."""
    for _ in range(32):
        if not isinstance(node, dict):
            return pointer, {}
        ref = node.get("$ref")
        if not (isinstance(ref, str) and (ref == "#" or ref.startswith("#/"))):
            return pointer, node  # not a JSON-pointer reference within the document (an anchor, say)
        pointer = ref[1:]
        node = _resolve_pointer(document, pointer)
    raise CapabilityLoadError(f"$ref chain too long at {pointer!r}")


def _resolve_pointer(document: Any, pointer: str) -> Any:
    node = document
    for raw in pointer.split("/")[1:] if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise CapabilityLoadError(f"unresolvable local $ref #{pointer}")
    return node


def _refuse_remote(uri: str) -> Any:
    raise RemoteReferenceRefused(
        f"remote $ref {uri!r} refused: capability schemas may only use references within their own document"
    )


def compile_schema(schema: dict[str, Any]) -> Any:
    """A jsonschema_rs validator for `schema` with the registry's engine settings.

    `retriever` is called for every reference outside the document and refuses it, so compiling fails
    instead of fetching (jsonschema-rs >= 0.27). `RegexOptions` selects the `regex` crate, which matches
    in linear time and rejects lookaround/backreferences at compile time (jsonschema-rs >= 0.30).
    Formats stay annotations, as JSON Schema 2020-12 specifies by default.
    """
    return jsonschema_rs.validator_for(schema, retriever=_refuse_remote, pattern_options=jsonschema_rs.RegexOptions())


def _dispatch_schema(schema: dict[str, Any], branches: dict[str, str], ref: CapabilityRef) -> dict[str, Any]:
    """One schema checking `{<type>: message}` against the branch of <type>, with `schema` embedded once.

    `schema` keeps its own refs (it is embedded whole, under its own `$id`); each message type is a property
    referring to its branch, so compiling this costs one copy of the document whatever the number of types
    (types sharing a branch share its compiled validator).
    """
    base = schema.get("$id")
    embedded = dict(schema)
    if isinstance(base, str) and base:
        base = urldefrag(base)[0]
    if not isinstance(base, str) or not base:
        base = f"urn:aitp:capability:{ref.id}:{version_text(ref.version)}"
        embedded["$id"] = base
    properties = {message_type: {"$ref": f"{base}#{pointer}"} for message_type, pointer in branches.items()}
    return {"$schema": schema.get("$schema"), "properties": properties, "$defs": {"capability": embedded}}


def _normalize_url(url: str) -> str | None:
    """The lookup key of a schema URL: host (lower-cased) + path for http(s), or a bare "/path"; else None."""
    url = url.strip()
    if url.endswith("#"):
        url = url[:-1]
    if url.startswith("/"):
        return url if "?" not in url and "#" not in url else None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        return None
    return parts.netloc.lower() + parts.path


RESOLVED_URLS_KEPT = 1024


class Registry:
    def __init__(self) -> None:
        self._infos: dict[str, CapabilityInfo] = {}
        self._versions: dict[CapabilityRef, CapabilityVersion] = {}
        self._compiled: dict[CapabilityRef, CompiledVersion] = {}
        self._aliases: dict[str, CapabilityRef] = {}
        # URL -> what it resolves to: every capability message and every actor's declarations name one, on
        # every request (~3 us to parse each time). Cleared whenever the registry changes.
        self._resolved: dict[str, CapabilityRef | None] = {}
        # stored versions that could not be loaded: ref -> (content fingerprint, why), not retried while the same
        self._set_aside: dict[CapabilityRef, tuple[str, str]] = {}
        self.generation = 0  # bumped by every change: what was derived from an older one is stale

    # ----------------------------------------------------------------- loading

    @classmethod
    def from_directory(cls, path: Path) -> Registry:
        """Load, convert, check and compile every capability under `path`; CapabilityLoadError if anything is off."""
        path = Path(path)
        if not path.is_dir():
            raise CapabilityLoadError(f"capabilities directory {path} does not exist")
        registry = cls()
        for directory in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            registry._load_capability(directory)
        return registry

    def _load_capability(self, directory: Path) -> None:
        meta_path = directory / "capability.json"
        meta = _read_json(meta_path)
        if not isinstance(meta, dict):
            raise CapabilityLoadError(f"{meta_path}: must be a JSON object")
        capability_id = meta.get("id")
        if capability_id != directory.name or not _ID_RE.match(directory.name):
            raise CapabilityLoadError(
                f"{meta_path}: id must equal the directory name {directory.name!r} and match {_ID_RE.pattern}"
            )
        for key in ("title", "description"):
            if not isinstance(meta.get(key), str):
                raise CapabilityLoadError(f"{meta_path}: {key!r} must be a string")
        openapi_root = meta.get("openapi_root")
        if openapi_root is not None and not isinstance(openapi_root, str):
            raise CapabilityLoadError(f"{meta_path}: 'openapi_root' must be a string")

        self.add_capability(capability_id, meta["title"], meta["description"])
        versions: list[Version] = []
        for version_dir in sorted(p for p in directory.iterdir() if p.is_dir()):
            match = _VERSION_DIR_RE.match(version_dir.name)
            if not match:
                raise CapabilityLoadError(f"{version_dir}: version directories are named X.Y.Z (no 'v')")
            ref = CapabilityRef(capability_id, Version(match["version"]))
            self._load_version(ref, version_dir, openapi_root)
            versions.append(ref.version)
        if not versions:
            raise CapabilityLoadError(f"{directory}: no version directory (X.Y.Z/schema.json)")
        versions.sort()

        aliases = meta.get("aliases", [])
        if not isinstance(aliases, list):
            raise CapabilityLoadError(f"{meta_path}: 'aliases' must be a list")
        for alias in aliases:
            if not (isinstance(alias, dict) and isinstance(alias.get("url"), str) and alias.get("version")):
                raise CapabilityLoadError(f'{meta_path}: each alias is {{"url": ..., "version": "X.Y.Z"}}')
            match = _VERSION_DIR_RE.match(str(alias["version"]))
            if not match or Version(match["version"]) not in versions:
                raise CapabilityLoadError(f"{meta_path}: alias {alias['url']} names unknown version {alias['version']}")
            try:
                self.add_alias(alias["url"], CapabilityRef(capability_id, Version(match["version"])))
            except ValueError as exc:
                raise CapabilityLoadError(f"{meta_path}: {exc}") from None

    def _load_version(self, ref: CapabilityRef, directory: Path, openapi_root: str | None) -> None:
        schema_path = directory / "schema.json"
        source = _read_json(schema_path)
        examples: dict[str, dict[str, Any]] = {}
        examples_dir = directory / "examples"
        if examples_dir.is_dir():
            for example_path in sorted(examples_dir.glob("*.json")):
                example = _read_json(example_path)
                if not isinstance(example, dict):
                    raise CapabilityLoadError(f"{example_path}: an example message must be a JSON object")
                examples[example_path.name] = example
        try:
            compiled = compile_version(ref, source, openapi_root, examples)
        except SchemaRejected as exc:
            raise CapabilityLoadError(f"{schema_path}: {exc}") from None
        self.add_version(compiled)

    # ------------------------------------------------------- adding at run time

    def add_capability(self, capability_id: str, title: str | None = None, description: str | None = None) -> None:
        """Create a capability entry (no versions yet), or retitle an existing one."""
        info = self._infos.get(capability_id)
        if info is None:
            self._changed()
            self._infos[capability_id] = CapabilityInfo(
                capability_id, title or capability_id, description or "", [], []
            )
            return
        if title is not None:
            info.title = title
        if description is not None:
            info.description = description

    def add_version(self, compiled: CompiledVersion) -> None:
        """Make a compiled version resolvable and usable; its capability must have been added."""
        ref = compiled.version.ref
        self._changed()
        self._versions[ref] = compiled.version
        self._compiled[ref] = compiled
        info = self._infos.get(ref.id)
        if info is not None and ref.version not in info.versions:
            info.versions = sorted([*info.versions, ref.version])

    def set_aside(self, ref: CapabilityRef, fingerprint: str, reason: str) -> None:
        """Remember that the stored version `ref` with this content cannot be loaded (so it is not retried)."""
        self._set_aside[ref] = (fingerprint, reason)

    def is_set_aside(self, ref: CapabilityRef, fingerprint: str) -> bool:
        known = self._set_aside.get(ref)
        return known is not None and known[0] == fingerprint

    def set_aside_versions(self) -> dict[CapabilityRef, str]:
        """Stored versions this registry could not load, with the reason."""
        return {ref: reason for ref, (_, reason) in self._set_aside.items()}

    def _changed(self) -> None:
        self._resolved.clear()
        self.generation += 1

    def check_alias(self, url: str, ref: CapabilityRef) -> None:
        """AliasRefused unless `url` could become an alias of `ref` (see `add_alias`)."""
        key = _normalize_url(url)
        if key is None or key.startswith("/"):
            raise AliasRefused(f"alias {url!r} is not an absolute http(s) URL without query or fragment")
        taken = self._aliases.get(key)
        named = self.resolve(url)  # a canonical-form URL names a version even without an alias
        if taken is None and named is not None and (named.id != ref.id or self.get(named) is not None):
            taken = named
        if taken is not None and taken != ref:
            raise AliasRefused(f"alias {url} already means {taken}", taken=taken)

    def add_alias(self, url: str, ref: CapabilityRef) -> None:
        """Let `url` resolve to `ref`; AliasRefused if it is not an http(s) URL or already means something else."""
        self.check_alias(url, ref)
        self._changed()
        self._aliases[_normalize_url(url)] = ref  # type: ignore[index]
        info = self._infos[ref.id]
        entry = {"url": url, "version": version_text(ref.version)}
        if entry not in info.aliases:
            info.aliases.append(entry)

    def alias_of(self, url: str) -> CapabilityRef | None:
        """The version an alias URL stands for (None when `url` is not an alias)."""
        key = _normalize_url(url)
        return None if key is None else self._aliases.get(key)

    # ----------------------------------------------------------------- lookups

    def resolve(self, url: str) -> CapabilityRef | None:
        """The (capability, version) a schema URL names; None for an unknown capability or URL form.

        A known capability at a version this registry lacks still resolves (negotiation goes by major);
        `get` returns None for it.
        """
        if not isinstance(url, str):
            return None
        try:
            return self._resolved[url]
        except KeyError:
            pass
        if len(self._resolved) >= RESOLVED_URLS_KEPT:  # the URLs come from requests: keep a bounded set
            self._resolved.clear()
        ref = self._resolved[url] = self._resolve(url)
        return ref

    def _resolve(self, url: str) -> CapabilityRef | None:
        key = _normalize_url(url)
        if key is None:
            return None
        alias = self._aliases.get(key)
        if alias is not None:
            return alias
        for form in _URL_FORMS:
            match = form.match(key)
            if match and match["id"] in self._infos:
                return CapabilityRef(match["id"], Version(match["version"]))
        return None

    def capability(self, capability_id: str) -> CapabilityInfo | None:
        return self._infos.get(capability_id)

    def capabilities(self) -> list[CapabilityInfo]:
        return [self._infos[k] for k in sorted(self._infos)]

    def get(self, ref: CapabilityRef) -> CapabilityVersion | None:
        return self._versions.get(ref)

    def versions(self, capability_id: str) -> list[Version]:
        info = self._infos.get(capability_id)
        return list(info.versions) if info else []

    def validator(self, ref: CapabilityRef) -> Any:
        """The compiled jsonschema_rs validator for the whole schema (compiled once, at load)."""
        compiled = self._compiled.get(ref)
        if compiled is None:
            raise UnknownCapabilityVersion(str(ref))
        return compiled.root

    # -------------------------------------------------------------- validation

    def validate(self, ref: CapabilityRef, message: dict[str, Any], limit: int = 1) -> list[SchemaIssue]:
        """[] when `message` is valid for `ref`; else its first issue (see `CompiledVersion.validate`).

        Raises UnknownCapabilityVersion when the registry does not have `ref` (check `get` first).
        """
        compiled = self._compiled.get(ref)
        if compiled is None:
            raise UnknownCapabilityVersion(str(ref))
        return compiled.validate(message, limit)


def _issue(error: Any, skip: int) -> SchemaIssue:
    message = error.message
    if len(message) > MAX_ISSUE_MESSAGE:
        message = message[: MAX_ISSUE_MESSAGE - 1] + "…"
    return SchemaIssue(json_pointer(list(error.instance_path)[skip:]), message)


def _first_issue(validator: Any, instance: Any, skip: int) -> SchemaIssue | None:
    """The first error of `instance` (None if valid), its pointer without the first `skip` path parts."""
    try:
        validator.validate(instance)
    except jsonschema_rs.ValidationError as error:
        return _issue(error, skip)
    return None


def _issues(errors: Iterable[Any], limit: int, skip: int) -> list[SchemaIssue]:
    issues: list[SchemaIssue] = []
    for error in errors:
        issues.append(_issue(error, skip))
        if len(issues) >= limit:
            break
    return issues


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CapabilityLoadError(f"{path}: missing") from None
    except (OSError, ValueError) as exc:
        raise CapabilityLoadError(f"{path}: not readable JSON: {exc}") from None
