"""A throwaway certificate authority and a server certificate it signed for 127.0.0.1 and localhost, for the TLS
tests (tests/test_tls.py) and ``bench gateway --tls``: ``serve --tls-cert/--tls-key`` take the server's files, and a
client trusts the CA alone with ``trusting``."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_certificates(folder: Path) -> dict[str, Path]:
    """A test CA, a server certificate it signed for 127.0.0.1 and localhost (valid for a day), the server's key, and
    a key of another certificate (for refusals): their files in ``folder``, under the keys ``ca``, ``cert``, ``key``
    and ``other_key``."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, server_key, other_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    ca = (x509.CertificateBuilder().subject_name(_name("cbf test CA")).issuer_name(_name("cbf test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    server = (x509.CertificateBuilder().subject_name(_name("localhost")).issuer_name(ca.subject)
              .public_key(server_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                          x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                             critical=False)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
    files = {"ca": folder / "ca.pem", "cert": folder / "server.pem", "key": folder / "server.key",
             "other_key": folder / "other.key"}
    files["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files["cert"].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    files["key"].write_bytes(_pem_key(server_key))
    files["other_key"].write_bytes(_pem_key(other_key))
    return files


def trusting(ca: Path) -> ssl.SSLContext:
    """A client context that trusts the CA in ``ca`` only (and checks the host name)."""
    return ssl.create_default_context(cafile=str(ca))
