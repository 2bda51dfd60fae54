"""Locality prefixes: which changed paths a property observes.

A locality is a list of repo-relative path prefixes matched per path component,
so `api/handlers` covers `api/handlers/x.py` but not `api/handlers_v2/x.py`.
The gate intersects a diff's touched paths with every property's prefixes; with
big catalogs and big diffs that must stay linear, so `LocalityIndex` looks up
each component prefix of a path in a dict instead of testing every pair.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

_FORBIDDEN_CHARS = {"\0": "a NUL byte", "\n": "a newline", "\r": "a carriage return"}


def validate_prefix(prefix: str) -> str | None:
    """Return what is wrong with a locality prefix and how to fix it, or None if valid."""
    if not prefix:
        return "locality prefix is empty; name a repo-relative directory such as 'api/handlers'"
    for char, name in _FORBIDDEN_CHARS.items():
        if char in prefix:
            return f"locality prefix {prefix!r} contains {name}; remove it"
    if "\\" in prefix:
        return (
            f"locality prefix {prefix!r} contains a backslash; use '/' to separate path components"
        )
    if prefix.startswith("/"):
        return (
            f"locality prefix {prefix!r} is absolute; "
            f"write it relative to the repo root, e.g. {prefix.lstrip('/') or 'api'!r}"
        )
    body = prefix[:-1] if prefix.endswith("/") else prefix
    for component in body.split("/"):
        if component == "":
            return (
                f"locality prefix {prefix!r} has an empty path component; "
                "write each '/' once, e.g. 'a/b' instead of 'a//b'"
            )
        if component in (".", ".."):
            return (
                f"locality prefix {prefix!r} contains a {component!r} component; "
                "write the plain repo-relative path without '.' or '..'"
            )
    return None


def normalize_prefix(prefix: str) -> str:
    """Return a valid prefix without its optional trailing '/'; raise ValueError if invalid."""
    error = validate_prefix(prefix)
    if error is not None:
        raise ValueError(error)
    return prefix[:-1] if prefix.endswith("/") else prefix


def normalize_path(path: str) -> str:
    """Return a changed path in repo-relative form; raise ValueError if it escapes the repo.

    Leading './' and empty or '.' components are dropped (they name the same file);
    an absolute path or a '..' component cannot be attributed to a repo path.
    """
    for char, name in _FORBIDDEN_CHARS.items():
        if char in path:
            raise ValueError(f"path {path!r} contains {name}; paths must be one line")
    if path.startswith("/"):
        raise ValueError(f"path {path!r} is absolute; give it relative to the repo root")
    parts = path.split("/")
    if "" not in parts and "." not in parts and ".." not in parts:
        return path  # already repo-relative: the common case, no copy
    components = [part for part in parts if part not in ("", ".")]
    if ".." in components:
        raise ValueError(
            f"path {path!r} contains a '..' component; give the plain repo-relative path"
        )
    if not components:
        raise ValueError(f"path {path!r} names no file; give a repo-relative file path")
    return "/".join(components)


def component_prefixes(path: str) -> Iterator[str]:
    """Yield 'a', 'a/b', 'a/b/c' for 'a/b/c': every prefix that could cover the path."""
    start = 0
    while True:
        cut = path.find("/", start)
        if cut < 0:
            yield path
            return
        yield path[:cut]
        start = cut + 1


def covers(prefix: str, path: str) -> bool:
    """Whether `prefix` covers `path`, compared per path component."""
    base = normalize_prefix(prefix)
    target = normalize_path(path)
    return target == base or target.startswith(base + "/")


class LocalityIndex:
    """Maps prefixes to the properties observing them, for linear-time diff matching."""

    def __init__(self, entries: Iterable[tuple[str, Sequence[str]]]) -> None:
        self._by_prefix: dict[str, list[str]] = {}
        # Proper component prefixes of indexed prefixes: a path's walk down its own
        # prefixes stops where no indexed prefix lies below.
        self._above: set[str] = set()
        for property_id, prefixes in entries:
            for prefix in prefixes:
                error = validate_prefix(prefix)
                if error is not None:
                    raise ValueError(f"property {property_id}: {error}")
                normal = normalize_prefix(prefix)
                self._above.update(c for c in component_prefixes(normal) if c != normal)
                owners = self._by_prefix.setdefault(normal, [])
                # One property may list overlapping prefixes; keep each owner once.
                if not owners or owners[-1] != property_id:
                    owners.append(property_id)

    def match(self, paths: Iterable[str], *, normalized: bool = False) -> dict[str, str]:
        """Map each matched property id to the first path (in input order) that matched it.

        Paths are normalized before lookup (ValueError on absolute or '..' paths) unless
        the caller already did (`normalized=True`); the reported path is the one given.
        A prefix is consumed on its first hit: later paths under it cannot change any
        answer, so no owner list is walked twice.
        """
        pending = dict(self._by_prefix)
        matched: dict[str, str] = {}
        for path in paths:
            for candidate in component_prefixes(path if normalized else normalize_path(path)):
                owners = pending.pop(candidate, None)
                if owners is not None:
                    for property_id in owners:
                        matched.setdefault(property_id, path)
                if candidate not in self._above:
                    break
        return matched
