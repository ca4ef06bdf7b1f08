"""A throwaway certificate authority for the listener tests, made with the openssl CLI.

    pki = Pki(tmp_path)                          # a CA: pki.ca (PEM)
    server = pki.issue("server", server=True)    # CN=localhost, SAN DNS:localhost, IP:127.0.0.1
    alice = pki.issue("alice")                   # a client certificate, CN=alice
    pki.revoke(alice); crl = pki.crl()           # a CRL that lists it

EC P-256 keys (fast to make), two days of validity, the extensions a
strict verifier wants (basicConstraints, keyUsage, key identifiers).
``openssl ca`` keeps the index that revocation needs.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

_CA_CONF = """\
[ca]
default_ca = test_ca
[test_ca]
dir = {dir}
database = $dir/index.txt
new_certs_dir = $dir/issued
certificate = $dir/ca.pem
private_key = $dir/ca.key
serial = $dir/serial
crlnumber = $dir/crlnumber
default_md = sha256
default_days = 2
default_crl_days = 2
policy = anything
unique_subject = no
copy_extensions = none
[anything]
commonName = optional
[v3_ca]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""

_LEAF = """\
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, keyAgreement
extendedKeyUsage = {usage}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
{san}
"""


def openssl(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=30, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {done.stderr}")
    return done.stdout


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, as PEM files."""

    cert: str
    key: str


class Pki:
    """A CA in ``directory`` (see the module doc)."""

    def __init__(self, directory: Path, name: str = "Test CA") -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "issued").mkdir(exist_ok=True)
        (directory / "index.txt").write_text("")
        (directory / "serial").write_text("1000\n")
        (directory / "crlnumber").write_text("1000\n")
        self.conf = directory / "ca.cnf"
        self.conf.write_text(_CA_CONF.format(dir=directory))
        self.ca = str(directory / "ca.pem")
        openssl("req", "-x509", "-new", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(directory / "ca.key"),
                "-out", self.ca, "-days", "2", "-subj", f"/CN={name}",
                "-config", str(self.conf), "-extensions", "v3_ca")

    def issue(self, name: str, *, cn: str | None = None, server: bool = False,
              san: str | None = None) -> Issued:
        """A certificate signed by this CA: a server's (localhost, 127.0.0.1) or a client's.

        ``cn`` is the subject's Common Name (default ``name``; "" for none);
        ``san`` a subjectAltName value such as ``"DNS:device-7"``.
        """
        key, csr, cert = (str(self.dir / f"{name}.{ext}") for ext in ("key", "csr", "pem"))
        cn = ("localhost" if server else name) if cn is None else cn
        subject = f"/CN={cn}" if cn else "/O=no common name"
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", key, "-out", csr, "-subj", subject)
        if server:
            san = san or "DNS:localhost, IP:127.0.0.1"
        ext = self.dir / f"{name}.ext"
        ext.write_text(_LEAF.format(usage="serverAuth" if server else "clientAuth",
                                    san=f"subjectAltName = {san}" if san else ""))
        openssl("ca", "-batch", "-config", str(self.conf), "-in", csr, "-out", cert,
                "-extfile", str(ext), "-notext")
        return Issued(cert, key)

    def revoke(self, issued: Issued) -> None:
        openssl("ca", "-config", str(self.conf), "-revoke", issued.cert)

    def crl(self) -> str:
        """A CRL (PEM) listing every certificate revoked so far."""
        path = str(self.dir / "crl.pem")
        openssl("ca", "-gencrl", "-config", str(self.conf), "-out", path)
        return path


@dataclass(frozen=True)
class Authority:
    """The certificates most listener tests use: a CA, a server, two clients."""

    pki: Pki
    server: Issued  # CN=localhost, SAN DNS:localhost, IP:127.0.0.1
    alice: Issued   # a client, CN=alice
    bob: Issued     # a client, CN=bob

    @property
    def ca(self) -> str:
        return self.pki.ca


def authority(directory: Path, name: str = "Test CA") -> Authority:
    """A new CA in ``directory`` with its server and client certificates."""
    pki = Pki(directory, name)
    return Authority(pki, pki.issue("server", server=True), pki.issue("alice"), pki.issue("bob"))
