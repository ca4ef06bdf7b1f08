"""use_identity_as_username: which name of a verified client certificate becomes the user.

The dicts have the shape of ``SSLObject.getpeercert()``; the integration
tests (tests/integration/listeners) check the same with real certificates.
"""

from __future__ import annotations

from typing import Any

import pytest

from actorbroker.transport.tls import TlsOptions, certificate_identity, tls_problem


def _cert(subject: tuple[tuple[str, str], ...] = (), san: tuple[tuple[str, str], ...] = ()
          ) -> dict[str, Any]:
    return {"subject": tuple((pair,) for pair in subject), "subjectAltName": san}


@pytest.mark.parametrize(
    ("peercert", "identity"),
    [
        (_cert((("countryName", "FR"), ("commonName", "alice"))), "alice"),
        (_cert((("commonName", "alice"),), (("DNS", "alice.example"),)), "alice"),
        (_cert((("organizationName", "Acme"),), (("email", "d@x"), ("DNS", "device-7"))),
         "device-7"),  # DNS before email, whatever their order in the certificate
        (_cert((), (("URI", "spiffe://acme/sensor"),)), "spiffe://acme/sensor"),
        (_cert((), (("IP Address", "10.0.0.7"),)), "10.0.0.7"),
        (_cert((("organizationName", "Acme"),)), None),
        (_cert((("commonName", ""),)), None),
        ({}, None),
        (None, None),
    ],
)
def test_certificate_identity(peercert: Any, identity: str | None) -> None:
    assert certificate_identity(peercert) == identity


def test_tls_problem_names_the_file() -> None:
    why = tls_problem(TlsOptions("/nonexistent/server.pem", "/nonexistent/server.key"))
    assert why is not None and why.startswith("/nonexistent/server.pem: ")
