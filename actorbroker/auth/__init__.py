"""Auth layer: MQTT 5 enhanced authentication (pluggable methods, SCRAM), Mosquitto password and ACL files.

Imports the standard library, :mod:`actorbroker.codec` (reason codes) and
:mod:`actorbroker.errors` only (import-linter checks it). No I/O except
reading and writing the credentials file.

    from actorbroker.auth import Credentials, authenticators
    auth = authenticators(Credentials.load("scram.txt"))   # SCRAM-SHA-256/512
    exchange = Exchange(auth.get("SCRAM-SHA-256"), client_id)
    outcome = exchange.step(connect.properties.authentication_data)  # Continue/Success/Failure

A new method is any object with a ``method`` name and ``begin(client_id)``
returning something with ``step(data) -> Outcome`` (:mod:`.exchange`).
"""

from .acl import AclFile, ClientAcl
from .client_ids import ClientIdPatterns
from .credentials import Credentials, authenticators
from .exchange import (
    Authenticator,
    Authenticators,
    AuthState,
    Continue,
    Exchange,
    Failure,
    Mechanism,
    Outcome,
    PasswordChecker,
    Success,
)
from .passwords import PBKDF2_ITERATIONS, PasswordEntry, PasswordFile, hash_password
from .scram import MECHANISMS, ScramAuthenticator, ScramClient, ScramError, ScramSecret, derive
from .security import Security
from .throttle import LoginThrottle

__all__ = [
    "MECHANISMS",
    "PBKDF2_ITERATIONS",
    "AclFile",
    "ClientAcl",
    "ClientIdPatterns",
    "LoginThrottle",
    "PasswordEntry",
    "PasswordFile",
    "Security",
    "hash_password",
    "AuthState",
    "Authenticator",
    "Authenticators",
    "Continue",
    "Credentials",
    "Exchange",
    "Failure",
    "Mechanism",
    "Outcome",
    "PasswordChecker",
    "ScramAuthenticator",
    "ScramClient",
    "ScramError",
    "ScramSecret",
    "Success",
    "authenticators",
    "derive",
]
