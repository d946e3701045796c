"""The exceptions of the tunehub client."""


class TunehubError(Exception):
    """Base of every error the client raises."""


class ModelError(TunehubError):
    """A th_model_* call failed; the message is th_model_last_error()'s text."""


class IntegrityError(TunehubError):
    """A bundle's bytes do not match the digest the server stated for them."""


class ServerError(TunehubError):
    """The server answered an error: its HTTP status and its JSON error's code and message."""

    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ProvenanceError(IntegrityError):
    """A bundle's signed provenance (its DSSE envelope) does not hold; the subclass names the check, the
    message words it as `tunehub verify` does."""


class EnvelopeError(ProvenanceError):
    """The envelope is not JSON, not DSSE, has the wrong payloadType, or its payload is no in-toto Statement v1."""


class SignatureError(ProvenanceError):
    """No signature of the envelope verifies over PAE(payloadType, payload) with the public key."""


class SubjectError(ProvenanceError):
    """The bundle's sha256 is not the statement's subject."""


class VerifyKeyError(ProvenanceError):
    """The public key cannot be read or is no Ed25519 public key."""


class UnsignedError(ProvenanceError):
    """A verify key was given but the server has no signed provenance for the version pulled."""
