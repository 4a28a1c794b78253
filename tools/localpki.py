"""Certificates of the local control plane's client CA: the CA itself and the client certificates
it issues (the API server reads a client's user from CN and its groups from O)."""

from __future__ import annotations

import datetime

# Validity of the client CA and of the client certificates it issues.
CLIENT_CERT_DAYS = 365


def certificate(
    name: str, organizations: list[str], signer: tuple[bytes, bytes] | None, *, ca: bool
) -> tuple[bytes, bytes]:
    """A certificate for CN `name`, O `organizations` (client auth), self-signed when `signer` (CA
    certificate and key, PEM) is None; returns the PEM certificate and its PEM key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        + [x509.NameAttribute(NameOID.COMMON_NAME, name)]
    )
    if signer is None:
        issuer, signing_key = subject, key
    else:
        issuer = x509.load_pem_x509_certificate(signer[0]).subject
        loaded = serialization.load_pem_private_key(signer[1], password=None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        signing_key = loaded
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CLIENT_CERT_DAYS))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return builder.sign(signing_key, hashes.SHA256()).public_bytes(pem), key_pem
