"""A Toxiproxy HTTP API client with a timeout on every call and one instance per server.

Why not toxiproxy-python: it keeps host and port as class attributes (one global server per
process), has no timeouts (a Toxiproxy under load can hang the harness forever), and pulls in the
Python 2 ``future`` package. This wrapper is small and talks the documented REST API directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import requests

from harness.base.errors import FaultError

#: Every API call returns within this; Toxiproxy answers in milliseconds when healthy.
CALL_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class ProxySpec:
    name: str
    listen: str
    upstream: str
    enabled: bool = True


class LinkControl(Protocol):
    """What network faults (chaos/faults/network.py) and heal-all (chaos/heal.py) do to links, by link
    name (``client-to-n1``, ``n1-to-n2-internal``): ``Toxiproxy`` itself on the built-in backends,
    ``clusters.backends.external.links.ExternalLinks`` on a cluster the harness did not start."""

    def ping(self) -> bool: ...

    def proxies(self) -> dict[str, dict[str, Any]]: ...

    def populate(self, specs: Iterable[ProxySpec]) -> None: ...

    def recreate(self, specs: Iterable[ProxySpec]) -> None: ...

    def set_enabled(self, name: str, enabled: bool) -> None: ...

    def add_toxic(self, proxy: str, kind: str, attributes: dict[str, Any], *, stream: str = "downstream",
                  toxicity: float = 1.0, name: str | None = None) -> str: ...

    def remove_toxic(self, proxy: str, toxic: str) -> None: ...

    def reset(self) -> None: ...

    def unhealed(self) -> list[str]: ...

    def close(self) -> None: ...


class Toxiproxy:
    """One Toxiproxy server's API."""

    def __init__(self, url: str, timeout: float = CALL_TIMEOUT_S) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._http = requests.Session()
        # Never route loopback API calls through a proxy from the environment (HTTP_PROXY).
        self._http.trust_env = False

    def _call(self, method: str, path: str, body: Any = None, ok: Iterable[int] = (200, 201, 204)) -> Any:
        try:
            resp = self._http.request(method, self.url + path, json=body, timeout=self.timeout)
        except requests.RequestException as exc:
            raise FaultError(f"Toxiproxy {method} {path} at {self.url} failed: {exc}") from exc
        if resp.status_code not in ok:
            raise FaultError(f"Toxiproxy {method} {path} answered {resp.status_code}: {resp.text.strip()[:300]}")
        return resp.json() if resp.content else None

    def version(self) -> str:
        """The server's version string (newer servers answer JSON, older plain text)."""
        try:
            resp = self._http.get(self.url + "/version", timeout=self.timeout)
        except requests.RequestException as exc:
            raise FaultError(f"Toxiproxy GET /version at {self.url} failed: {exc}") from exc
        try:
            return str(resp.json()["version"])
        except (ValueError, KeyError, TypeError):
            return resp.text.strip()

    def ping(self) -> bool:
        """True when the API answers."""
        try:
            resp = self._http.get(self.url + "/version", timeout=self.timeout)
            return resp.status_code == 200
        except requests.RequestException:
            return False

    def proxies(self) -> dict[str, dict[str, Any]]:
        return dict(self._call("GET", "/proxies"))

    def populate(self, specs: Iterable[ProxySpec]) -> None:
        """Create (or update) all proxies in one call."""
        body = [{"name": s.name, "listen": s.listen, "upstream": s.upstream, "enabled": s.enabled} for s in specs]
        self._call("POST", "/populate", body)

    def delete_proxy(self, name: str) -> None:
        """Remove a proxy (its toxics and open connections with it); absent already is fine."""
        self._call("DELETE", f"/proxies/{name}", ok=(200, 204, 404))

    def recreate(self, specs: Iterable[ProxySpec]) -> None:
        """Delete every proxy the server has and create ``specs`` anew: a heal for a server whose
        ``/reset`` fails or leaves something behind."""
        for name in self.proxies():
            self.delete_proxy(name)
        self.populate(specs)

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Disable = the proxy stops listening and drops its open connections: a clean cut."""
        self._call("POST", f"/proxies/{name}", {"enabled": enabled})

    def set_upstream(self, name: str, upstream: str) -> None:
        """Point a proxy at another upstream (its open connections are closed)."""
        self._call("POST", f"/proxies/{name}", {"upstream": upstream})

    def add_toxic(
        self,
        proxy: str,
        kind: str,
        attributes: dict[str, Any],
        *,
        stream: str = "downstream",
        toxicity: float = 1.0,
        name: str | None = None,
    ) -> str:
        """Add a toxic; returns its name."""
        toxic_name = name or f"{kind}_{stream}"
        body = {"name": toxic_name, "type": kind, "stream": stream, "toxicity": toxicity, "attributes": attributes}
        self._call("POST", f"/proxies/{proxy}/toxics", body)
        return toxic_name

    def remove_toxic(self, proxy: str, toxic: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic}")

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/proxies/{proxy}/toxics"))

    def reset(self) -> None:
        """Re-enable every proxy and remove every toxic."""
        self._call("POST", "/reset")

    def unhealed(self) -> list[str]:
        """What is still faulted: disabled proxies and proxies with toxics. Empty = healed."""
        problems = []
        for name, p in sorted(self.proxies().items()):
            if not p.get("enabled", True):
                problems.append(f"{name}: disabled")
            if p.get("toxics"):
                problems.append(f"{name}: toxics {[t.get('name') for t in p['toxics']]}")
        return problems

    def close(self) -> None:
        self._http.close()
