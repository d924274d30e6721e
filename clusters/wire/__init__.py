"""The wire proxy on every client link (docs/WIRE-FAULTS.md): its Go source (``kwire/``), its build
(``kwire_build``) and its control API's client (``wire_api``)."""
