"""Toxiproxy, the proxy on every link: built from the Go module proxy (``toxiproxy_build``) and driven
through its HTTP API (``toxiproxy_api``)."""
